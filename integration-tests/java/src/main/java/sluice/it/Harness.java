package sluice.it;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Process-level plumbing shared by every test program.
 *
 * <ul>
 *   <li>Result lines go to stdout, one per line, flushed at once ({@link #out}).
 *   <li>A watchdog halts the JVM with exit code {@value #EXIT_TIMEOUT} after the hard timeout, so
 *       a program can never hang a test, not even in a client's shutdown.
 *   <li>The clients' log directory defaults to a fresh temp dir unless
 *       {@code -Drocketmq.client.logRoot} was given.
 *   <li>RocketMQ 5.x client shutdown is not left to wait 3 s for nothing ({@link
 *       #startShutdownNudger}).
 *   <li>The name server address lookup over HTTP (used by RocketMQ clients when no name server is
 *       configured) is pointed at a closed loopback port so it can never leave the machine.
 * </ul>
 *
 * <p>Exit codes: 0 success, 1 failure (an {@code ERR} line says why), 2 usage error, 124 hard
 * timeout (the same code as coreutils' {@code timeout}).
 */
final class Harness {
    static final int EXIT_OK = 0;
    static final int EXIT_FAIL = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_TIMEOUT = 124;

    /** stdout, UTF-8, autoflush. All machine-readable lines go through here. */
    static final PrintStream out = new PrintStream(
            new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);

    private Harness() {}

    /**
     * Must run before any RocketMQ class is loaded (their loggers read the properties once).
     *
     * @param program name used in diagnostics
     * @param hardTimeoutMs the watchdog's deadline, from now
     */
    static void init(String program, long hardTimeoutMs) {
        if (System.getProperty("rocketmq.client.logRoot") == null) {
            try {
                Path dir = Files.createTempDirectory("sluice-it-" + program + "-");
                System.setProperty("rocketmq.client.logRoot", dir.toString());
            } catch (IOException e) {
                throw new RuntimeException("cannot create a temp log dir", e);
            }
        }
        // Never look the name server up over HTTP anywhere but a closed loopback port.
        if (System.getProperty("rocketmq.namesrv.domain") == null) {
            System.setProperty("rocketmq.namesrv.domain", "127.0.0.1:9");
        }
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(hardTimeoutMs);
            } catch (InterruptedException e) {
                return;
            }
            out.println("ERR timeout " + program + " did not finish within " + hardTimeoutMs + "ms");
            out.flush();
            System.err.flush();
            Runtime.getRuntime().halt(EXIT_TIMEOUT);
        }, "sluice-it-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        startShutdownNudger(Thread.currentThread());
    }

    /**
     * RocketMQ 5.x: shutting a client down ({@code NettyRemotingClient.shutdown}) joins its
     * "NettyEventExecutor" thread, which polls its queue with a 3 s timeout and checks its stop flag
     * only in between, so every producer, consumer and mqadmin command took up to 3 s longer to
     * end than its work. Once {@code main} is inside that shutdown, interrupting the executor
     * thread wakes it to see the flag (its loop catches the InterruptedException and ends). 4.x
     * does not wait there; nothing else is touched.
     */
    private static void startShutdownNudger(Thread main) {
        Thread nudger = new Thread(() -> {
            while (main.isAlive()) {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
                if (inClientShutdown(main)) {
                    for (Thread t : Thread.getAllStackTraces().keySet()) {
                        if (t.getName().equals("NettyEventExecutor")) {
                            t.interrupt();
                        }
                    }
                }
            }
        }, "sluice-it-shutdown-nudger");
        nudger.setDaemon(true);
        nudger.start();
    }

    private static boolean inClientShutdown(Thread thread) {
        for (StackTraceElement f : thread.getStackTrace()) {
            if (f.getMethodName().equals("shutdown") && f.getClassName().endsWith(".NettyRemotingClient")) {
                return true;
            }
        }
        return false;
    }

    /** One line, no newlines: "SimpleClassName: message [<- cause ...]". */
    static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        Throwable cur = t;
        int depth = 0;
        while (cur != null && depth < 4) {
            if (depth > 0) {
                sb.append(" <- ");
            }
            sb.append(cur.getClass().getSimpleName());
            if (cur.getMessage() != null) {
                sb.append(": ").append(cur.getMessage());
            }
            cur = cur.getCause() == cur ? null : cur.getCause();
            depth++;
        }
        return oneLine(sb.toString());
    }

    /** Collapses every run of whitespace (including newlines) to one space. */
    static String oneLine(String s) {
        return s.replaceAll("\\s+", " ").trim();
    }

    /** Escapes a message body for a result line: printable text stays, the rest becomes \xNN. */
    static String escapeBody(byte[] body) {
        if (body == null) {
            return "";
        }
        String s = new String(body, StandardCharsets.UTF_8);
        StringBuilder sb = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\') {
                sb.append("\\\\");
            } else if (c == '\n') {
                sb.append("\\n");
            } else if (c == '\r') {
                sb.append("\\r");
            } else if (c == '\t') {
                sb.append("\\t");
            } else if (c < 0x20 || c == 0x7f) {
                sb.append(String.format("\\x%02x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }

    /**
     * Lets SIGTERM end a long-running program cleanly. On SIGTERM a shutdown hook calls {@code wake}
     * (which should make {@code main} stop waiting), then waits up to 20 s for {@code main} to hand
     * its exit code to {@link Termination#exit} (after shutting its client down and printing its
     * result lines) and halts the JVM with that code. Without SIGTERM, {@link Termination#exit} is
     * {@link #exit}.
     */
    static Termination onSigterm(Runnable wake) {
        Termination t = new Termination();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (t.exiting) {
                return; // main called System.exit itself: nothing to wait for
            }
            t.requested = true;
            wake.run();
            try {
                t.finished.await(20, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            out.flush();
            System.err.flush();
            Runtime.getRuntime().halt(t.code);
        }, "sluice-it-sigterm"));
        return t;
    }

    /** See {@link #onSigterm}. */
    static final class Termination {
        private volatile boolean requested;
        private volatile boolean exiting;
        private volatile int code = EXIT_FAIL;
        private final java.util.concurrent.CountDownLatch finished = new java.util.concurrent.CountDownLatch(1);

        private Termination() {}

        /** Whether SIGTERM arrived. */
        boolean requested() {
            return requested;
        }

        /** Ends the program with {@code code}: at once, or through the SIGTERM hook once it runs. */
        void exit(int code) {
            this.code = code;
            // After SIGTERM the hook halts the JVM with this code (System.exit would block here).
            finished.countDown();
            if (!requested) {
                exiting = true;
                Harness.exit(code);
            }
        }
    }

    /** Prints a usage error and exits with {@value #EXIT_USAGE}. */
    static void usage(String program, String message, String usage) {
        out.println("ERR usage " + oneLine(message));
        System.err.println("usage: " + program + " " + usage);
        exit(EXIT_USAGE);
    }

    /** Flushes and exits; the watchdog still guards shutdown hooks. */
    static void exit(int code) {
        out.flush();
        System.err.flush();
        System.exit(code);
    }
}
