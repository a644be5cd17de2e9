pub mod answers;
