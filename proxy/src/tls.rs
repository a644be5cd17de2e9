//! TLS on the gRPC port (rustls), with Apache's modes and keys, so an SDK that uses TLS by
//! default (the Go SDK does) connects without being told otherwise.
//!
//! - `tlsServerMode` (sluice's key for Apache's `tls.server.mode`): `disabled` (plaintext
//!   only), `permissive` (the default, as Apache's: TLS and plaintext on the same port, told
//!   apart by the first byte a client sends: a TLS handshake record starts with 0x16, an
//!   HTTP/2 preface with `P`), `enforcing` (TLS only).
//! - `tlsTestModeEnable` (true, as Apache's): serve a self-signed certificate generated at
//!   start (Apache's test mode: clients that do not verify it, as the SDKs by default do not,
//!   connect; nothing is authenticated by it).
//! - otherwise `tlsCertPath` and `tlsKeyPath`: PEM files, the certificate chain and its
//!   private key (PKCS#8, PKCS#1 or SEC1), read at start: a missing or unreadable file stops
//!   the start with one line.
//!
//! The handshake offers ALPN `h2` (gRPC clients require it). Each connection is accepted,
//! sniffed and handshaken on a task of its own, so a slow client holds up nobody.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpConnectInfo};
use tracing::{debug, info, warn};

/// The first byte of a TLS handshake record (`ContentType.handshake`).
const TLS_HANDSHAKE: u8 = 0x16;
/// How long a new connection may take to send its first byte and finish a handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections accepted and not yet taken by the server.
const BACKLOG: usize = 64;

/// Whether TLS is served, and how (Apache's `TlsMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlsMode {
    /// Plaintext only.
    Disabled,
    /// TLS or plaintext, as each client starts.
    #[default]
    Permissive,
    /// TLS only.
    Enforcing,
}

/// The TLS keys of the proxy's config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TlsConfig {
    /// `tlsServerMode`: disabled, permissive (default) or enforcing.
    pub tls_server_mode: TlsMode,
    /// `tlsTestModeEnable`: a self-signed certificate made at start (true).
    pub tls_test_mode_enable: bool,
    /// `tlsCertPath`: the PEM certificate chain (without test mode).
    pub tls_cert_path: Option<PathBuf>,
    /// `tlsKeyPath`: its PEM private key.
    pub tls_key_path: Option<PathBuf>,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            tls_server_mode: TlsMode::Permissive,
            tls_test_mode_enable: true,
            tls_cert_path: None,
            tls_key_path: None,
        }
    }
}

/// Why TLS cannot be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A key naming a file is not set.
    #[error("{key} is not set (tlsTestModeEnable is false)")]
    Missing {
        /// The key.
        key: &'static str,
    },
    /// A file cannot be read or holds no PEM item of the kind.
    #[error("{key} {}: {reason}", path.display())]
    File {
        /// The key naming it.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The test certificate could not be made.
    #[error("cannot make the test-mode certificate: {0}")]
    TestCertificate(String),
    /// rustls refused the certificate and key.
    #[error("unusable certificate or key: {0}")]
    Rustls(#[from] rustls::Error),
}

/// What the listener serves TLS with.
#[derive(Clone)]
pub struct Tls {
    mode: TlsMode,
    acceptor: TlsAcceptor,
    /// The certificate served (first of the chain): tests trust it.
    certificate: CertificateDer<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// TLS as `config` says; `None` when disabled.
    ///
    /// # Errors
    /// Files not set, missing or unreadable; a certificate rustls cannot use.
    pub fn from_config(config: &TlsConfig) -> Result<Option<Tls>, TlsError> {
        if config.tls_server_mode == TlsMode::Disabled {
            return Ok(None);
        }
        let (chain, key) = if config.tls_test_mode_enable {
            test_certificate()?
        } else {
            let cert = config
                .tls_cert_path
                .as_deref()
                .ok_or(TlsError::Missing { key: "tlsCertPath" })?;
            let key = config
                .tls_key_path
                .as_deref()
                .ok_or(TlsError::Missing { key: "tlsKeyPath" })?;
            (read_chain(cert)?, read_key(key)?)
        };
        let tls = Tls::new(config.tls_server_mode, chain, key)?;
        info!(
            mode = ?config.tls_server_mode,
            test_mode = config.tls_test_mode_enable,
            "TLS on the gRPC port"
        );
        Ok(Some(tls))
    }

    /// TLS in `mode` with `chain` and its `key`.
    ///
    /// # Errors
    /// rustls refuses them.
    pub fn new(
        mode: TlsMode,
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Tls, TlsError> {
        let certificate = chain
            .first()
            .cloned()
            .ok_or(rustls::Error::NoCertificatesPresented)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Tls {
            mode,
            acceptor: TlsAcceptor::from(Arc::new(config)),
            certificate,
        })
    }

    /// The certificate served.
    #[must_use]
    pub fn certificate(&self) -> &CertificateDer<'static> {
        &self.certificate
    }

    /// The mode.
    #[must_use]
    pub fn mode(&self) -> TlsMode {
        self.mode
    }
}

/// A self-signed certificate for `localhost` and the loopback addresses.
fn test_certificate() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    let made = rcgen::generate_simple_self_signed(names)
        .map_err(|e| TlsError::TestCertificate(e.to_string()))?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
    Ok((vec![made.cert.der().clone()], key))
}

fn file_error(key: &'static str, path: &Path, reason: impl ToString) -> TlsError {
    TlsError::File {
        key,
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let key = "tlsCertPath";
    let text = std::fs::read(path).map_err(|e| file_error(key, path, e))?;
    let chain = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(key, path, e))?;
    if chain.is_empty() {
        return Err(file_error(key, path, "no PEM certificate"));
    }
    Ok(chain)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let key = "tlsKeyPath";
    let text = std::fs::read(path).map_err(|e| file_error(key, path, e))?;
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| file_error(key, path, e))
}

/// One accepted connection, in TLS or not.
#[derive(Debug)]
pub enum Conn {
    /// Plaintext.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<TlsStream<TcpStream>>),
}

impl Connected for Conn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        let tcp = match self {
            Conn::Plain(s) => s,
            Conn::Tls(s) => s.get_ref().0,
        };
        TcpConnectInfo {
            local_addr: tcp.local_addr().ok(),
            remote_addr: tcp.peer_addr().ok(),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s) => s.is_write_vectored(),
            Conn::Tls(s) => s.is_write_vectored(),
        }
    }
}

/// The connections of `listener`, each sniffed and handshaken per `tls`'s mode, as a stream
/// for the server. Ends when the server stops taking them.
pub fn incoming(listener: TcpListener, tls: Tls) -> ReceiverStream<io::Result<Conn>> {
    let (tx, rx) = mpsc::channel(BACKLOG);
    tokio::spawn(async move {
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors and the like: the listener stays up.
                        warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = tx.closed() => break,
            };
            if let Err(e) = stream.set_nodelay(true) {
                debug!(%peer, error = %e, "cannot set TCP_NODELAY");
            }
            let tls = tls.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, start(stream, &tls)).await {
                    Ok(Ok(conn)) => {
                        let _ = tx.send(Ok(conn)).await;
                    }
                    Ok(Err(e)) => debug!(%peer, error = %e, "connection dropped before serving"),
                    Err(_) => debug!(%peer, "no handshake in time: connection dropped"),
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

/// Reads nothing, peeks the first byte, and handshakes when it starts TLS (or must).
async fn start(stream: TcpStream, tls: &Tls) -> io::Result<Conn> {
    if tls.mode == TlsMode::Permissive {
        let mut first = [0u8; 1];
        let n = stream.peek(&mut first).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed before sending anything",
            ));
        }
        if first[0] != TLS_HANDSHAKE {
            return Ok(Conn::Plain(stream));
        }
    }
    let secured = tls.acceptor.accept(stream).await?;
    Ok(Conn::Tls(Box::new(secured)))
}

#[cfg(test)]
mod tests {
    use hyper_util::rt::TokioIo;
    use tokio_rustls::TlsConnector;
    use tonic::transport::{Channel, Endpoint, Uri};

    use super::*;
    use crate::pb::messaging_service_client::MessagingServiceClient;
    use crate::pb::{self, Code};
    use crate::{ClusterBackend, MessagingProxy, ProxyConfig};

    /// A proxy serving with `tls` on a free loopback port; its address.
    async fn serve(tls: Tls) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let backend = ClusterBackend::new(remoting::client::ClientConfig::default(), Vec::new());
        let service = MessagingProxy::new(backend, ProxyConfig::default(), addr.port());
        tokio::spawn(crate::server::serve(
            listener,
            Some(tls),
            service,
            std::future::pending(),
        ));
        addr
    }

    fn test_tls(mode: TlsMode) -> Tls {
        let config = TlsConfig {
            tls_server_mode: mode,
            ..TlsConfig::default()
        };
        Tls::from_config(&config).unwrap().unwrap()
    }

    /// A TLS channel trusting `certificate`, over rustls.
    async fn tls_channel(
        addr: std::net::SocketAddr,
        certificate: CertificateDer<'static>,
    ) -> Result<Channel, tonic::transport::Error> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certificate).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let connector = TlsConnector::from(Arc::new(config));
        Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let connector = connector.clone();
                async move {
                    let tcp = TcpStream::connect(addr).await?;
                    let name = rustls::pki_types::ServerName::try_from("localhost")
                        .map_err(io::Error::other)?;
                    let tls = connector.connect(name, tcp).await?;
                    Ok::<_, io::Error>(TokioIo::new(tls))
                }
            }))
            .await
    }

    async fn plain_channel(addr: std::net::SocketAddr) -> Result<Channel, tonic::transport::Error> {
        Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
    }

    /// A heartbeat without a client id: answered CLIENT_ID_REQUIRED, which proves the call
    /// reached the service.
    async fn heartbeat(channel: Channel) -> Result<i32, tonic::Status> {
        let response = MessagingServiceClient::new(channel)
            .heartbeat(pb::HeartbeatRequest::default())
            .await?;
        Ok(response.into_inner().status.unwrap_or_default().code)
    }

    #[tokio::test]
    async fn permissive_serves_tls_and_plaintext_on_one_port() {
        let tls = test_tls(TlsMode::Permissive);
        let certificate = tls.certificate().clone();
        let addr = serve(tls).await;
        let secured = tls_channel(addr, certificate).await.unwrap();
        assert_eq!(
            heartbeat(secured).await.unwrap(),
            Code::ClientIdRequired as i32
        );
        let plain = plain_channel(addr).await.unwrap();
        assert_eq!(
            heartbeat(plain).await.unwrap(),
            Code::ClientIdRequired as i32
        );
    }

    #[tokio::test]
    async fn enforcing_refuses_plaintext_and_a_client_that_does_not_trust_it() {
        let tls = test_tls(TlsMode::Enforcing);
        let certificate = tls.certificate().clone();
        let addr = serve(tls).await;
        let secured = tls_channel(addr, certificate).await.unwrap();
        assert_eq!(
            heartbeat(secured).await.unwrap(),
            Code::ClientIdRequired as i32
        );
        // Plaintext: its preface is taken for a handshake and the connection dropped.
        let plain = match plain_channel(addr).await {
            Ok(channel) => heartbeat(channel).await.is_err(),
            Err(_) => true,
        };
        assert!(plain, "plaintext served in enforcing mode");
        // Another certificate (another test-mode proxy's) is not trusted.
        let other = test_tls(TlsMode::Enforcing).certificate().clone();
        assert!(tls_channel(addr, other).await.is_err());
    }

    #[test]
    fn certificate_files_are_read_and_missing_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let (cert, key) = (
            dir.path().join("rocketmq.crt"),
            dir.path().join("rocketmq.key"),
        );
        std::fs::write(&cert, made.cert.pem()).unwrap();
        std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
        let config = TlsConfig {
            tls_server_mode: TlsMode::Enforcing,
            tls_test_mode_enable: false,
            tls_cert_path: Some(cert.clone()),
            tls_key_path: Some(key),
        };
        let tls = Tls::from_config(&config).unwrap().unwrap();
        assert_eq!(tls.certificate(), made.cert.der());
        let missing = TlsConfig {
            tls_key_path: Some(dir.path().join("nope.key")),
            ..config.clone()
        };
        let e = Tls::from_config(&missing).unwrap_err().to_string();
        assert!(
            e.starts_with("tlsKeyPath ") && e.contains("nope.key"),
            "{e}"
        );
        let unset = TlsConfig {
            tls_cert_path: None,
            ..config.clone()
        };
        assert_eq!(
            Tls::from_config(&unset).unwrap_err().to_string(),
            "tlsCertPath is not set (tlsTestModeEnable is false)"
        );
        let not_pem = TlsConfig {
            tls_cert_path: Some(dir.path().join("rocketmq.key")),
            ..config
        };
        assert!(Tls::from_config(&not_pem).is_err());
        let disabled = TlsConfig {
            tls_server_mode: TlsMode::Disabled,
            ..TlsConfig::default()
        };
        assert!(Tls::from_config(&disabled).unwrap().is_none());
        let default = Tls::from_config(&TlsConfig::default()).unwrap().unwrap();
        assert_eq!(default.mode(), TlsMode::Permissive, "Apache's default");
    }
}
