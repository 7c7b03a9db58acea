//! Test harness: a real relay bound to 127.0.0.1 on free ports (in-process), and a real
//! HTTP client (hyper) over the four transports of PROTOCOL.md §3.9.
#![allow(dead_code)]

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response};
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use httpipe::protocol::channel;
use httpipe_relay::{Config, Running};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The four ways a client can talk to the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum T {
    H1,
    H1Tls,
    H2c,
    H2,
}

impl T {
    pub fn is_h2(self) -> bool {
        matches!(self, T::H2c | T::H2)
    }
    pub fn is_tls(self) -> bool {
        matches!(self, T::H1Tls | T::H2)
    }
    /// curl's options for this transport (`-k`: the test relay's certificate is its own).
    pub fn curl_flags(self) -> &'static [&'static str] {
        match self {
            T::H1 => &["--http1.1"],
            T::H1Tls => &["--http1.1", "-k"],
            T::H2c => &["--http2-prior-knowledge"],
            T::H2 => &["--http2", "-k"],
        }
    }
}

pub type TestBody = BoxBody<Bytes, io::Error>;

/// A byte stream to the relay (plain TCP or TLS).
pub trait RawIo: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<X: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> RawIo for X {}
pub type Raw = Box<dyn RawIo>;

pub struct Relay {
    pub running: Option<Running>,
    pub http: SocketAddr,
    pub https: SocketAddr,
    pub cert_dir: PathBuf,
    tls_h1: Arc<rustls::ClientConfig>,
    tls_h2: Arc<rustls::ClientConfig>,
}

/// A relay with default settings.
pub async fn relay() -> Relay {
    relay_with(|_| {}).await
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let mut rnd = [0u8; 8];
    getrandom::fill(&mut rnd).unwrap();
    let d = std::env::temp_dir().join(format!("httpipe-relay-test-{tag}-{}", hex::encode(rnd)));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A relay with settings changed by `f` (ports, TLS files and www are set first).
pub async fn relay_with(f: impl FnOnce(&mut Config)) -> Relay {
    let dir = temp_dir("cert");
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.join("cert.pem"), ck.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), ck.signing_key.serialize_pem()).unwrap();
    let mut config = Config {
        http_port: 0,
        https_port: 0,
        tls_cert: Some(dir.join("cert.pem")),
        tls_key: Some(dir.join("key.pem")),
        www: Some(dir.join("www")),
        sdk_dir: Some(dir.join("pkg")),
        shutdown_grace: Duration::from_millis(200),
        ..Config::default()
    };
    f(&mut config);
    let running = httpipe_relay::start(config).await.unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ck.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mk = |alpn: &[u8]| {
        let mut c = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots.clone())
            .with_no_client_auth();
        c.alpn_protocols = vec![alpn.to_vec()];
        Arc::new(c)
    };
    Relay {
        http: running.http_addr,
        https: running.https_addr.unwrap(),
        running: Some(running),
        cert_dir: dir,
        tls_h1: mk(b"http/1.1"),
        tls_h2: mk(b"h2"),
    }
}

/// An in-flight request: its response (or error) and the connection task.
pub struct Call {
    resp: Option<JoinHandle<Result<Response<Incoming>, hyper::Error>>>,
    conn: JoinHandle<()>,
    /// A second handle on the socket, to hang up (hyper's HTTP/2 client drives the
    /// connection in a task of its own, so aborting ours isn't enough).
    socket: Option<std::net::TcpStream>,
}

impl Call {
    /// The response head (panics if the request failed).
    pub async fn response(&mut self) -> Response<Incoming> {
        self.try_response().await.expect("request failed")
    }

    pub async fn try_response(&mut self) -> Result<Response<Incoming>, hyper::Error> {
        let h = self.resp.take().expect("response taken twice");
        h.await.expect("request task panicked")
    }

    /// True if the response head hasn't arrived yet (waits `d` to be sure).
    pub async fn still_waiting(&mut self, d: Duration) -> bool {
        tokio::time::sleep(d).await;
        !self.resp.as_ref().expect("response taken").is_finished()
    }

    /// Closes the connection (the client hangs up).
    pub fn cancel(self) {
        if let Some(r) = &self.resp {
            r.abort();
        }
        self.conn.abort();
        if let Some(s) = &self.socket {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Relay {
    pub fn base(&self, t: T) -> String {
        if t.is_tls() {
            format!("https://localhost:{}", self.https.port())
        } else {
            format!("http://127.0.0.1:{}", self.http.port())
        }
    }

    /// Sends `method path` with `headers` and `body` over a new connection of transport `t`.
    /// A channel is named by its key, as the peers know it (§5.1): a valid `channel=KEY`
    /// given once goes out as `channel=ID` (derived) with the key in `X-Httpipe-Channel-Key`,
    /// unless `headers` set that header themselves; [`Relay::call_as_is`] sends `path` as it is.
    pub async fn call(
        &self,
        t: T,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: TestBody,
    ) -> Call {
        let explicit = headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(channel::KEY_HEADER));
        match keyed_channel(path) {
            Some((path, key)) if !explicit => {
                let mut hs = headers.to_vec();
                hs.push((channel::KEY_HEADER, &key));
                self.call_as_is(t, method, &path, &hs, body).await
            }
            _ => self.call_as_is(t, method, path, headers, body).await,
        }
    }

    /// [`Relay::call`] without naming channels by their keys.
    pub async fn call_as_is(
        &self,
        t: T,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: TestBody,
    ) -> Call {
        let addr = if t.is_tls() { self.https } else { self.http };
        let tcp = TcpStream::connect(addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let std_tcp = tcp.into_std().unwrap();
        let socket = std_tcp.try_clone().unwrap();
        let tcp = TcpStream::from_std(std_tcp).unwrap();
        let uri = if t.is_h2() {
            format!("{}{}", self.base(t), path)
        } else {
            path.to_string()
        };
        let mut req = Request::builder().method(method).uri(uri);
        if !t.is_h2() {
            let host = if t.is_tls() {
                format!("localhost:{}", addr.port())
            } else {
                addr.to_string()
            };
            req = req.header("host", host);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(body).unwrap();
        if t.is_tls() {
            let tls = self.tls(t, tcp).await;
            Call {
                socket: Some(socket),
                ..send(t, TokioIo::new(tls), req).await
            }
        } else {
            Call {
                socket: Some(socket),
                ..send(t, TokioIo::new(tcp), req).await
            }
        }
    }

    /// A raw connection to the plain port (`tls` false) or a TLS connection (ALPN http/1.1)
    /// to the TLS port, for tests that write bytes by hand.
    pub async fn raw(&self, tls: bool) -> Raw {
        let t = if tls { T::H1Tls } else { T::H1 };
        let addr = if tls { self.https } else { self.http };
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        };
        self.connect_with(t, socket.unwrap()).await
    }

    /// A byte stream to the port of transport `t` (TLS with its ALPN on the TLS port) over
    /// `socket`, which the caller set up (e.g. with a small receive buffer).
    pub async fn connect_with(&self, t: T, socket: tokio::net::TcpSocket) -> Raw {
        let addr = if t.is_tls() { self.https } else { self.http };
        let tcp = socket.connect(addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        if !t.is_tls() {
            return Box::new(tcp);
        }
        Box::new(self.tls(t, tcp).await)
    }

    /// TLS over `tcp` with the ALPN of transport `t`, trusting the relay's certificate.
    async fn tls(&self, t: T, tcp: TcpStream) -> tokio_rustls::client::TlsStream<TcpStream> {
        let cfg = if t.is_h2() {
            self.tls_h2.clone()
        } else {
            self.tls_h1.clone()
        };
        tokio_rustls::TlsConnector::from(cfg)
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap()
    }

    pub async fn get(&self, t: T, path: &str) -> Call {
        self.call(t, Method::GET, path, &[], empty()).await
    }

    pub async fn post(&self, t: T, path: &str, body: TestBody) -> Call {
        self.call(t, Method::POST, path, &[], body).await
    }

    /// Waits (up to 10 s) until the gauge `name` in `/metrics` reads `value`: e.g. until a
    /// consumer is registered, so a test doesn't race its own requests.
    pub async fn until_gauge(&self, name: &str, value: u64) {
        let want = format!("{name} {value}\n");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let mut c = self.get(T::H1, "/metrics").await;
            if text(c.response().await).await.contains(&want) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{name} never reached {value}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Starts the relay's graceful shutdown (as SIGTERM does); the handle resolves when it
    /// stopped. The relay's address stays usable for checks (new connections are refused).
    pub fn begin_shutdown(&mut self) -> JoinHandle<()> {
        let running = self.running.take().expect("relay already stopped");
        tokio::spawn(running.shutdown())
    }

    pub async fn shutdown(mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await;
        }
    }
}

/// The relay's files (TLS key, www) go with it, however the test ended.
impl Drop for Relay {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.cert_dir);
    }
}

async fn send<I>(t: T, io: I, req: Request<TestBody>) -> Call
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    if t.is_h2() {
        let (mut sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(4 * 1024 * 1024)
            .initial_connection_window_size(8 * 1024 * 1024)
            .handshake(io)
            .await
            .unwrap();
        let conn = tokio::spawn(async move {
            let _ = conn.await;
        });
        let resp = tokio::spawn(async move { sender.send_request(req).await });
        Call {
            resp: Some(resp),
            conn,
            socket: None,
        }
    } else {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
        let conn = tokio::spawn(async move {
            let _ = conn.await;
        });
        let resp = tokio::spawn(async move { sender.send_request(req).await });
        Call {
            resp: Some(resp),
            conn,
            socket: None,
        }
    }
}

pub fn empty() -> TestBody {
    full(Bytes::new())
}

pub fn full(b: impl Into<Bytes>) -> TestBody {
    Full::new(b.into()).map_err(|never| match never {}).boxed()
}

/// A request body the test writes chunk by chunk.
pub struct BodyTx(mpsc::Sender<Result<Frame<Bytes>, io::Error>>);

impl BodyTx {
    pub async fn send(&self, b: impl Into<Bytes>) {
        self.0
            .send(Ok(Frame::data(b.into())))
            .await
            .expect("request body closed");
    }
    /// Like `send`, but the relay may already have stopped reading (a rejection).
    pub async fn send_lossy(&self, b: impl Into<Bytes>) {
        let _ = self.0.send(Ok(Frame::data(b.into()))).await;
    }
    /// How many bytes of `chunk`s the client handed to the relay's connection until
    /// `deadline` or until the relay stopped reading.
    pub async fn push_until(&self, chunk: Bytes, deadline: Instant) -> usize {
        let mut taken = 0;
        while let Ok(Ok(())) =
            tokio::time::timeout_at(deadline.into(), self.0.send(Ok(Frame::data(chunk.clone()))))
                .await
        {
            taken += chunk.len();
        }
        taken
    }
    /// Makes the body fail (the client aborts the upload).
    pub async fn abort(self) {
        let _ = self.0.send(Err(io::Error::other("test abort"))).await;
    }
}

/// A streaming request body; dropping the [`BodyTx`] ends it cleanly.
pub fn channel_body() -> (BodyTx, TestBody) {
    let (tx, rx) = mpsc::channel(1);
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) });
    (BodyTx(tx), StreamBody::new(stream).boxed())
}

/// Reads a whole body (`Err` if the response was truncated/aborted).
pub async fn read_all(resp: Response<Incoming>) -> Result<Bytes, hyper::Error> {
    Ok(resp.into_body().collect().await?.to_bytes())
}

pub async fn text(resp: Response<Incoming>) -> String {
    String::from_utf8(read_all(resp).await.unwrap().to_vec()).unwrap()
}

pub fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    getrandom::fill(&mut v).unwrap();
    v
}

/// Fails the test if `f` takes longer than `secs`.
pub async fn within<F: std::future::Future>(secs: f64, what: &str, f: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs_f64(secs), f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {secs}s: {what}"),
    }
}

/// A transport test that runs longer than this has hung: it fails with its name instead of
/// keeping the whole suite waiting (CI once hung 25 min on one racy request).
pub const TEST_BOUND_S: u64 = 180;

pub async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    if tokio::time::timeout(Duration::from_secs(TEST_BOUND_S), f)
        .await
        .is_err()
    {
        panic!("hung: still running after {TEST_BOUND_S}s");
    }
}

/// Instantiates `async fn $name(t: T)` as one test per transport, each bounded by
/// [`TEST_BOUND_S`].
#[macro_export]
macro_rules! on_all_transports {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn h1() { bounded(super::$name(T::H1)).await }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn h1_tls() { bounded(super::$name(T::H1Tls)).await }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn h2c() { bounded(super::$name(T::H2c)).await }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn h2() { bounded(super::$name(T::H2)).await }
        }
    )*};
}

/// A child process (the relay binary) killed if the test ends before it exited.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl KillOnDrop {
    /// Sends SIGTERM and waits (up to 5 s) for a successful exit; `what` names the case.
    pub fn sigterm_and_wait(&mut self, what: &str) {
        std::process::Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                assert!(status.success(), "{what}: {status}");
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: relay did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A tool a test needs (curl, `.venv`, ...) is missing: the test fails with `what` and how to
/// get it, so a CI machine without it can't pass by skipping; with HTTPIPE_ALLOW_MISSING_TOOLS=1
/// it prints SKIPPED and the caller returns (the test passes without having run).
pub fn missing_tool(test: &str, what: &str) {
    if std::env::var_os("HTTPIPE_ALLOW_MISSING_TOOLS").is_some_and(|v| v == "1") {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: {what} (HTTPIPE_ALLOW_MISSING_TOOLS=1)"
        );
        return;
    }
    panic!(
        "{test}: {what}; `scripts/setup.sh full` installs it (set HTTPIPE_ALLOW_MISSING_TOOLS=1 to skip instead)"
    );
}

/// Whether `curl` runs.
pub fn have_curl() -> bool {
    std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok()
}

/// `path` with its one valid `channel=KEY` replaced by the derived `channel=ID`, and `KEY`
/// (see [`Relay::call`]); `None` when there is none, several, or an invalid one.
pub fn keyed_channel(path: &str) -> Option<(String, String)> {
    let (base, query) = path.split_once('?')?;
    let mut keys = query
        .split('&')
        .filter_map(|kv| kv.strip_prefix("channel="));
    let key = keys.next()?;
    if keys.next().is_some() || !httpipe::protocol::query::is_valid_channel(key) {
        return None;
    }
    let id = channel::channel_id(key);
    let query: Vec<String> = query
        .split('&')
        .map(|kv| match kv.strip_prefix("channel=") {
            Some(_) => format!("channel={id}"),
            None => kv.to_string(),
        })
        .collect();
    Some((format!("{base}?{}", query.join("&")), key.to_string()))
}
