//! The exporter's HTTP endpoint: `GET /metrics` (OpenMetrics text) and `GET /healthz`.
//!
//! | request                       | answer                                                               |
//! |-------------------------------|----------------------------------------------------------------------|
//! | `GET /metrics` (query ignored)| 200, `render()`, `application/openmetrics-text; version=1.0.0`       |
//! | `GET /healthz`                | 200 `ok` when `health()` is true, else 503 `no GPU is up`            |
//! | `HEAD` of either              | the same status and headers, no body                                 |
//! | another path                  | 404                                                                  |
//! | another method on those paths | 405 with `Allow: GET, HEAD`                                          |
//! | target over 2 KiB             | 414, answered as soon as the request line is that long               |
//! | `Content-Length` over 64 KiB  | 413, answered from the header alone: the body is never read          |
//! | chunked request body          | 411 (a body without a length cannot be bounded before reading it)    |
//! | head over 16 KiB, bad syntax  | 431, 400                                                             |
//! | nothing complete within 3 s   | 408                                                                  |
//!
//! Every answer closes its connection (`Connection: close`). A scraper reconnects once per scrape, which
//! costs nothing at scrape rates, and no idle keep-alive connection ever holds a handler.
//!
//! # Threads and bounds
//!
//! One accept thread hands connections to a fixed pool of four handler threads through a queue of 32;
//! when the queue is full the accept thread answers 503 itself rather than queue without bound. Every
//! connection has a deadline of 3 s to deliver its request and a write timeout of 5 s, so a silent,
//! slow or vanished client holds one handler for at most a few seconds while the other three keep
//! answering scrapes. [`Server::stop`] (and drop) shuts down the sockets being served and returns within
//! a second.
//!
//! # Why not tiny_http
//!
//! This server is written on `std::net` rather than tiny_http 0.12, which was the first choice for having
//! no async runtime. tiny_http cannot bound a client: it sets no socket timeouts and exposes no hook to
//! set them, spawns a thread per connection (so idle connections pile up threads and descriptors, and its
//! accept thread exits for good on the first accept error, e.g. out of descriptors), and when a request
//! whose body was not read is dropped it allocates a buffer the size of the declared `Content-Length` to
//! drain it (an unmerged upstream fix), so one header such as `Content-Length: 10^12`
//! aborts the process. Two routes with no request body need very little HTTP; what they need is bounds.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Renders the current metrics as OpenMetrics text ending in `# EOF`; called once per scrape.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// True while at least one GPU is being read; drives `/healthz`.
pub type Health = Arc<dyn Fn() -> bool + Send + Sync>;

/// Content type of `/metrics`.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Longest request target (path and query) served; longer ones get 414.
pub const MAX_TARGET_BYTES: usize = 2 * 1024;

/// Largest request body accepted (and read, then discarded); a longer declared body gets 413.
pub const MAX_BODY_BYTES: u64 = 64 * 1024;

/// Largest request head (request line and headers) read; a longer one gets 431.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Room for the method, spaces and version around a target on the request line.
const REQUEST_LINE_SLACK: usize = 32;

/// Handler threads. Four bound the exporter's footprint while letting scrapes through when up to three
/// clients are stalled.
const WORKERS: usize = 4;

/// Connections accepted but not yet picked up by a handler; beyond this the accept thread answers 503.
const QUEUE: usize = 32;

/// Time a client has, from its connection being picked up, to send its whole request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// Longest a single write of a response may block on a client that does not read.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Time spent, after answering, discarding what the client still sends before closing. Closing a socket
/// with unread input makes the kernel send a reset, which can destroy the answer before the client has
/// read it; a short drain lets the client see the answer and close first.
const LINGER: Duration = Duration::from_millis(250);

/// Write timeout of the accept thread's own 503, so an overload can never stall accepting.
const BUSY_WRITE_TIMEOUT: Duration = Duration::from_millis(100);

/// How often the accept thread polls its non-blocking listener, and so how soon it sees a stop.
const ACCEPT_POLL: Duration = Duration::from_millis(25);

/// Pause after an accept error (e.g. out of file descriptors) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How often an idle handler checks for a stop.
const WORKER_POLL: Duration = Duration::from_millis(100);

/// How long [`Server::stop`] waits for its threads before leaving any still inside `render`/`health`.
const STOP_GRACE: Duration = Duration::from_millis(900);

/// Why the server could not start. Each message names the address and what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The listen address is not `HOST:PORT`.
    #[error("cannot listen on {addr}: not a HOST:PORT address ({cause}); pass --listen like 0.0.0.0:9400")]
    BadAddress { addr: String, cause: io::Error },
    /// Another process already listens on the port.
    #[error("cannot listen on {addr}: address in use; pass --listen with a free port")]
    AddrInUse { addr: String },
    /// Ports below 1024 need privileges.
    #[error(
        "cannot listen on {addr}: permission denied; pass --listen with a port above 1023 or grant \
         CAP_NET_BIND_SERVICE"
    )]
    PermissionDenied { addr: String },
    /// The host part is not an address of this machine.
    #[error(
        "cannot listen on {addr}: not an address of this host; pass --listen with one of this node's \
         addresses, or 0.0.0.0:PORT for all"
    )]
    AddrNotAvailable { addr: String },
    /// Any other failure to open the listening socket (including a host name that does not resolve).
    #[error("cannot listen on {addr}: {cause}; pass --listen with an IP address and free port of this host")]
    Listen { addr: String, cause: io::Error },
    /// The operating system refused a thread.
    #[error("cannot start the HTTP server's threads: {cause}; the host is out of threads or memory")]
    Threads { cause: io::Error },
}

impl HttpError {
    fn listen(addr: &str, cause: io::Error) -> Self {
        let addr = addr.to_owned();
        match cause.kind() {
            io::ErrorKind::AddrInUse => Self::AddrInUse { addr },
            io::ErrorKind::PermissionDenied => Self::PermissionDenied { addr },
            io::ErrorKind::AddrNotAvailable => Self::AddrNotAvailable { addr },
            io::ErrorKind::InvalidInput => Self::BadAddress { addr, cause },
            _ => Self::Listen { addr, cause },
        }
    }
}

/// A running HTTP server. Stop it with [`Server::stop`] or by dropping it.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// What the accept thread, the handlers and [`Server::stop`] share.
struct Shared {
    stopping: AtomicBool,
    /// One slot per handler: a handle on the connection it is serving, so a stop can shut the socket
    /// down and end a blocked read or write at once.
    serving: Vec<Mutex<Option<TcpStream>>>,
    render: Render,
    health: Health,
}

/// Binds `listen` (`HOST:PORT`; port 0 picks a free one), starts the accept thread and the handler pool,
/// and returns at once.
pub fn start(listen: &str, render: Render, health: Health) -> Result<Server, HttpError> {
    let listener = TcpListener::bind(listen).map_err(|e| HttpError::listen(listen, e))?;
    let addr = listener.local_addr().map_err(|e| HttpError::listen(listen, e))?;
    // Non-blocking so the accept thread can notice a stop without a wake-up connection.
    listener.set_nonblocking(true).map_err(|e| HttpError::listen(listen, e))?;

    let shared = Arc::new(Shared {
        stopping: AtomicBool::new(false),
        serving: (0..WORKERS).map(|_| Mutex::new(None)).collect(),
        render,
        health,
    });
    let (queue, incoming) = mpsc::sync_channel::<TcpStream>(QUEUE);
    let incoming = Arc::new(Mutex::new(incoming));

    // Built before the threads so that, if one cannot be spawned, dropping it stops those already running.
    let mut server = Server { addr, shared: Arc::clone(&shared), threads: Vec::with_capacity(WORKERS + 1) };
    for slot in 0..WORKERS {
        let (shared, incoming) = (Arc::clone(&shared), Arc::clone(&incoming));
        let handler = thread::Builder::new()
            .name(format!("http-handler-{slot}"))
            .spawn(move || handle_connections(&shared, slot, &incoming))
            .map_err(|cause| HttpError::Threads { cause })?;
        server.threads.push(handler);
    }
    let accept = thread::Builder::new()
        .name("http-accept".to_owned())
        .spawn(move || accept_connections(&listener, &queue, &shared))
        .map_err(|cause| HttpError::Threads { cause })?;
    server.threads.push(accept);
    Ok(server)
}

impl Server {
    /// The address the server listens on (with the actual port when started on port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, cuts the connections being served, and joins the threads; returns within a
    /// second. A thread still inside `render` or `health` after that is left to finish on its own.
    pub fn stop(self) {
        drop(self);
    }

    fn shut_down(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        for slot in &self.shared.serving {
            if let Some(stream) = lock(slot).as_ref() {
                // Ends a handler's blocked read or write now instead of at its timeout.
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        for thread in self.threads.drain(..) {
            while !thread.is_finished() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(5));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shut_down();
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish_non_exhaustive()
    }
}

/// A lock that outlives a panic elsewhere: the guarded values stay valid whatever a panicking thread did.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The accept thread: hands each connection to the handlers, or answers 503 when they are all behind.
fn accept_connections(listener: &TcpListener, queue: &SyncSender<TcpStream>, shared: &Shared) {
    while !shared.stopping.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                // Some platforms pass the listener's non-blocking mode on to accepted sockets.
                if stream.set_nonblocking(false).is_err() {
                    continue;
                }
                match queue.try_send(stream) {
                    Ok(()) => {}
                    Err(TrySendError::Full(stream)) => refuse_busy(stream),
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => thread::sleep(ACCEPT_POLL),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Out of descriptors, aborted handshakes and the like pass; keep serving.
            Err(_) => thread::sleep(ACCEPT_BACKOFF),
        }
    }
}

/// Answers 503 from the accept thread, with a short write timeout so it cannot stall accepting.
fn refuse_busy(mut stream: TcpStream) {
    if stream.set_write_timeout(Some(BUSY_WRITE_TIMEOUT)).is_ok() {
        let busy = Response::text(503, "the exporter is busy; retry\n");
        let _ = busy.write_to(&mut stream, false);
    }
}

/// A handler thread: serves one connection at a time until the server stops.
fn handle_connections(shared: &Shared, slot: usize, incoming: &Mutex<Receiver<TcpStream>>) {
    while !shared.stopping.load(Ordering::SeqCst) {
        let next = lock(incoming).recv_timeout(WORKER_POLL);
        let stream = match next {
            Ok(stream) => stream,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        *lock(&shared.serving[slot]) = stream.try_clone().ok();
        // Checked after publishing the socket, so a stop either sees it or is seen here.
        if !shared.stopping.load(Ordering::SeqCst) {
            // A panic here would be a bug in this module; it costs that connection, not the handler.
            let _ = catch_unwind(AssertUnwindSafe(|| serve(stream, shared)));
        }
        *lock(&shared.serving[slot]) = None;
    }
}

/// Reads one request from `stream`, answers it and closes the connection.
fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    if stream.set_write_timeout(Some(WRITE_TIMEOUT)).is_err() {
        return;
    }
    let (response, head_only) = match read_request(&mut stream, Instant::now() + REQUEST_TIMEOUT) {
        Ok(request) => (route(&request, shared), request.method == "HEAD"),
        Err(Reject::Gone) => return,
        Err(reject) => (reject.response(), false),
    };
    // A client that went away is not an error worth reporting.
    let _ = response.write_to(&mut stream, head_only);
    linger_close(stream);
}

/// The parts of a request the routes look at.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    method: String,
    /// The target without its query string.
    path: String,
}

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    request: Request,
    content_length: u64,
}

/// Why a request is refused before routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reject {
    /// The client closed or reset the connection: nobody to answer.
    Gone,
    BadRequest(&'static str),
    Timeout,
    TargetTooLong,
    HeadTooLarge,
    BodyTooLarge,
    LengthRequired,
    Version,
}

impl Reject {
    fn response(self) -> Response {
        match self {
            Self::Gone => Response::text(400, "bad request: the connection closed\n"),
            Self::BadRequest(why) => Response::text(400, &format!("bad request: {why}\n")),
            Self::Timeout => Response::text(408, "the request did not arrive within 3 s\n"),
            Self::TargetTooLong => {
                Response::text(414, &format!("the request target is over {MAX_TARGET_BYTES} bytes\n"))
            }
            Self::HeadTooLarge => {
                Response::text(431, &format!("the request head is over {MAX_HEAD_BYTES} bytes\n"))
            }
            Self::BodyTooLarge => {
                Response::text(413, &format!("request bodies over {MAX_BODY_BYTES} bytes are refused\n"))
            }
            Self::LengthRequired => {
                Response::text(411, "chunked request bodies are refused; send a Content-Length\n")
            }
            Self::Version => Response::text(505, "only HTTP/1.0 and HTTP/1.1 are served\n"),
        }
    }
}

/// Reads a request head and any (bounded) body from `stream` by `deadline`. The body is discarded: no
/// route takes one, but reading it lets the connection close cleanly.
fn read_request(stream: &mut TcpStream, deadline: Instant) -> Result<Request, Reject> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(end) = head_end(&buf) {
            break end;
        }
        check_partial_head(&buf)?;
        let n = read_some(stream, &mut chunk, deadline)?;
        if n == 0 {
            return Err(if buf.is_empty() {
                Reject::Gone
            } else {
                Reject::BadRequest("request ended early")
            });
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = parse_head(&buf[..end])?;
    let already = u64::try_from(buf.len() - end).unwrap_or(u64::MAX);
    let mut left = head.content_length.saturating_sub(already);
    while left > 0 {
        let want = chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        match read_some(stream, &mut chunk[..want], deadline)? {
            0 => return Err(Reject::Gone),
            n => left = left.saturating_sub(u64::try_from(n).unwrap_or(u64::MAX)),
        }
    }
    Ok(head.request)
}

/// One read bounded by `deadline`.
fn read_some(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<usize, Reject> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Reject::Timeout);
        }
        stream.set_read_timeout(Some(left)).map_err(|_| Reject::Gone)?;
        match stream.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                return Err(Reject::Timeout);
            }
            Err(_) => return Err(Reject::Gone),
        }
    }
}

/// The length of the head (through its blank line) if `buf` holds a complete one. Bare `\n` line ends
/// are accepted as well as `\r\n`.
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.iter().enumerate().find_map(|(i, &b)| {
        if b != b'\n' {
            return None;
        }
        let rest = &buf[i + 1..];
        if rest.starts_with(b"\n") {
            Some(i + 2)
        } else if rest.starts_with(b"\r\n") {
            Some(i + 3)
        } else {
            None
        }
    })
}

/// Refuses an incomplete head as soon as it is certain to be too long, without waiting for the rest.
fn check_partial_head(buf: &[u8]) -> Result<(), Reject> {
    let first_line = buf.iter().position(|&b| b == b'\n').unwrap_or(buf.len());
    if first_line > MAX_TARGET_BYTES + REQUEST_LINE_SLACK {
        // A request line that long is an overlong target if it looks like `METHOD /…`.
        return Err(if buf.contains(&b' ') {
            Reject::TargetTooLong
        } else {
            Reject::BadRequest("malformed request line")
        });
    }
    if buf.len() > MAX_HEAD_BYTES {
        return Err(Reject::HeadTooLarge);
    }
    Ok(())
}

/// Parses a complete request head: `METHOD SP TARGET SP HTTP/1.x`, then `Name: value` lines.
fn parse_head(head: &[u8]) -> Result<Head, Reject> {
    if head.len() > MAX_HEAD_BYTES {
        return Err(Reject::HeadTooLarge);
    }
    let text = std::str::from_utf8(head).map_err(|_| Reject::BadRequest("request head is not text"))?;
    let mut lines = text.split('\n').map(|line| line.strip_suffix('\r').unwrap_or(line));

    let mut parts = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Reject::BadRequest("malformed request line"));
    };
    if method.is_empty() || !method.bytes().all(is_token_byte) {
        return Err(Reject::BadRequest("malformed method"));
    }
    if target.len() > MAX_TARGET_BYTES {
        return Err(Reject::TargetTooLong);
    }
    if target.is_empty() || target.bytes().any(|b| b.is_ascii_control()) {
        return Err(Reject::BadRequest("malformed request target"));
    }
    match version {
        "HTTP/1.0" | "HTTP/1.1" => {}
        v if v.starts_with("HTTP/") => return Err(Reject::Version),
        _ => return Err(Reject::BadRequest("malformed HTTP version")),
    }

    let mut content_length = None;
    let mut chunked = false;
    for line in lines.filter(|line| !line.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(Reject::BadRequest("malformed header line"));
        };
        // Also refuses `Name : value` and folded continuation lines, as RFC 9112 asks.
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(Reject::BadRequest("malformed header name"));
        }
        let value = value.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case("content-length") {
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Reject::BadRequest("Content-Length is not a number"));
            }
            // All digits, so the only failure is overflow: a length beyond any limit.
            let length = value.parse::<u64>().unwrap_or(u64::MAX);
            if content_length.is_some_and(|previous| previous != length) {
                return Err(Reject::BadRequest("conflicting Content-Length headers"));
            }
            content_length = Some(length);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = true;
        }
    }
    if chunked {
        return Err(Reject::LengthRequired);
    }
    let content_length = content_length.unwrap_or(0);
    if content_length > MAX_BODY_BYTES {
        return Err(Reject::BodyTooLarge);
    }
    let path = target.split_once('?').map_or(target, |(path, _query)| path);
    Ok(Head { request: Request { method: method.to_owned(), path: path.to_owned() }, content_length })
}

/// True for the bytes RFC 9110 allows in a method or header name.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Answers a well-formed request.
fn route(request: &Request, shared: &Shared) -> Response {
    let known = matches!(request.path.as_str(), "/metrics" | "/healthz");
    if !known {
        return Response::text(404, "not found; the exporter serves /metrics and /healthz\n");
    }
    if !matches!(request.method.as_str(), "GET" | "HEAD") {
        let mut response = Response::text(405, "only GET and HEAD are served\n");
        response.allow = true;
        return response;
    }
    // `render` and `health` come from the caller; a panic in them must not take a handler with it.
    if request.path == "/metrics" {
        match catch_unwind(AssertUnwindSafe(|| (shared.render)())) {
            Ok(body) => {
                Response { status: 200, content_type: METRICS_CONTENT_TYPE, body: body.into(), allow: false }
            }
            Err(_) => Response::text(500, "rendering the metrics failed; see the exporter's log\n"),
        }
    } else {
        match catch_unwind(AssertUnwindSafe(|| (shared.health)())) {
            Ok(true) => Response::text(200, "ok\n"),
            Ok(false) => Response::text(503, "no GPU is up\n"),
            Err(_) => Response::text(500, "the health check failed; see the exporter's log\n"),
        }
    }
}

/// A complete response, written in one go.
#[derive(Debug)]
struct Response {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    /// Whether to send `Allow: GET, HEAD` (with 405).
    allow: bool,
}

impl Response {
    fn text(status: u16, body: &str) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.as_bytes().to_vec(),
            allow: false,
        }
    }

    /// Writes the status line, headers and (unless answering `HEAD`) the body.
    fn write_to(&self, out: &mut impl Write, head_only: bool) -> io::Result<()> {
        let mut bytes = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len(),
            if self.allow { "Allow: GET, HEAD\r\n" } else { "" },
        )
        .into_bytes();
        if !head_only {
            bytes.extend_from_slice(&self.body);
        }
        out.write_all(&bytes)?;
        out.flush()
    }
}

/// The reason phrase of the statuses this server sends.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Closes after answering: signals the end of the answer, then discards what the client still sends for
/// at most [`LINGER`] and [`MAX_BODY_BYTES`], so the close does not reset the connection under the answer.
fn linger_close(mut stream: TcpStream) {
    if stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let deadline = Instant::now() + LINGER;
    let mut sink = [0u8; 4096];
    let mut budget = MAX_BODY_BYTES;
    while budget > 0 {
        match read_some(&mut stream, &mut sink, deadline) {
            Ok(0) | Err(_) => return,
            Ok(n) => budget = budget.saturating_sub(u64::try_from(n).unwrap_or(u64::MAX)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::atomic::AtomicBool;

    const METRICS: &str =
        "# TYPE gpu_energy_joules counter\ngpu_energy_joules_total{gpu=\"0\"} 12.5\n# EOF\n";

    /// A server on a free loopback port whose `/healthz` follows the returned flag.
    fn test_server() -> (Server, Arc<AtomicBool>) {
        let up = Arc::new(AtomicBool::new(true));
        let health_up = Arc::clone(&up);
        let server = start(
            "127.0.0.1:0",
            Arc::new(|| METRICS.to_owned()),
            Arc::new(move || health_up.load(Ordering::SeqCst)),
        )
        .unwrap();
        (server, up)
    }

    struct Reply {
        status: u16,
        head: String,
        body: Vec<u8>,
    }

    impl Reply {
        fn header(&self, name: &str) -> Option<&str> {
            self.head.lines().skip(1).find_map(|line| {
                let (n, v) = line.split_once(':')?;
                n.eq_ignore_ascii_case(name).then(|| v.trim())
            })
        }

        fn body(&self) -> &str {
            std::str::from_utf8(&self.body).unwrap()
        }
    }

    fn parse_reply(bytes: &[u8]) -> Reply {
        let end = head_end(bytes).expect("a complete response head");
        let head = String::from_utf8(bytes[..end].to_vec()).unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        Reply { status, head, body: bytes[end..].to_vec() }
    }

    /// Reads a whole response (the server closes after each) from a connected stream.
    fn read_reply(stream: &mut TcpStream) -> Reply {
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).unwrap();
        parse_reply(&bytes)
    }

    /// Sends `raw` on a new connection and reads the response.
    fn exchange(addr: SocketAddr, raw: &[u8]) -> Reply {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(raw).unwrap();
        read_reply(&mut stream)
    }

    fn get(addr: SocketAddr, target: &str) -> Reply {
        exchange(addr, format!("GET {target} HTTP/1.1\r\nHost: node\r\n\r\n").as_bytes())
    }

    #[test]
    fn metrics_are_served_as_openmetrics() {
        let (server, _) = test_server();
        let reply = get(server.local_addr(), "/metrics");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("content-type"), Some(METRICS_CONTENT_TYPE));
        assert_eq!(reply.header("content-length"), Some(METRICS.len().to_string().as_str()));
        assert_eq!(reply.body(), METRICS);
    }

    #[test]
    fn query_string_on_metrics_is_ignored() {
        let (server, _) = test_server();
        let reply = get(server.local_addr(), "/metrics?name[]=gpu_energy_joules_total");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body(), METRICS);
    }

    #[test]
    fn http_1_0_and_bare_newlines_are_served() {
        let (server, _) = test_server();
        let reply = exchange(server.local_addr(), b"GET /metrics HTTP/1.0\n\n");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body(), METRICS);
    }

    #[test]
    fn request_sent_in_pieces_is_served() {
        let (server, _) = test_server();
        let mut stream = TcpStream::connect(server.local_addr()).unwrap();
        for piece in ["GET /met", "rics HTTP/1.1\r\nHo", "st: node\r\n", "\r\n"] {
            stream.write_all(piece.as_bytes()).unwrap();
            thread::sleep(Duration::from_millis(30));
        }
        assert_eq!(read_reply(&mut stream).status, 200);
    }

    #[test]
    fn small_body_is_read_and_ignored() {
        let (server, _) = test_server();
        let reply = exchange(server.local_addr(), b"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body(), METRICS);
    }

    #[test]
    fn healthz_follows_health() {
        let (server, up) = test_server();
        let reply = get(server.local_addr(), "/healthz");
        assert_eq!((reply.status, reply.body()), (200, "ok\n"));
        up.store(false, Ordering::SeqCst);
        let reply = get(server.local_addr(), "/healthz");
        assert_eq!((reply.status, reply.body()), (503, "no GPU is up\n"));
    }

    #[test]
    fn head_has_the_status_and_length_but_no_body() {
        let (server, up) = test_server();
        let reply = exchange(server.local_addr(), b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.header("content-length"), Some(METRICS.len().to_string().as_str()));
        assert!(reply.body.is_empty());
        up.store(false, Ordering::SeqCst);
        let reply = exchange(server.local_addr(), b"HEAD /healthz HTTP/1.1\r\n\r\n");
        assert_eq!(reply.status, 503);
        assert!(reply.body.is_empty());
    }

    #[test]
    fn other_paths_are_404() {
        let (server, _) = test_server();
        for target in ["/", "/metrics/", "/metricsx", "/favicon.ico", "*"] {
            assert_eq!(get(server.local_addr(), target).status, 404, "{target}");
        }
    }

    #[test]
    fn other_methods_are_405_with_allow() {
        let (server, _) = test_server();
        for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
            let reply =
                exchange(server.local_addr(), format!("{method} /metrics HTTP/1.1\r\n\r\n").as_bytes());
            assert_eq!(reply.status, 405, "{method}");
            assert_eq!(reply.header("allow"), Some("GET, HEAD"));
        }
    }

    #[test]
    fn oversized_target_is_414() {
        let (server, _) = test_server();
        let long = format!("/metrics?{}", "a".repeat(MAX_TARGET_BYTES));
        assert_eq!(get(server.local_addr(), &long).status, 414);
        let just_fits = format!("/metrics?{}", "a".repeat(MAX_TARGET_BYTES - "/metrics?".len()));
        assert_eq!(get(server.local_addr(), &just_fits).status, 200);
    }

    #[test]
    fn endless_request_line_is_414_before_it_ends() {
        let (server, _) = test_server();
        let mut stream = TcpStream::connect(server.local_addr()).unwrap();
        let line = format!("GET /{}", "a".repeat(8 * 1024));
        stream.write_all(line.as_bytes()).unwrap();
        assert_eq!(read_reply(&mut stream).status, 414);
    }

    /// Sooner than any wait on a client ([`REQUEST_TIMEOUT`]), with room for a loaded machine's scheduling:
    /// what tells an answer that did not wait from one that did.
    const PROMPT: Duration = Duration::from_millis(2500);

    #[test]
    fn huge_content_length_is_413_without_reading_the_body() {
        let (server, _) = test_server();
        for length in ["1099511627776", "18446744073709551615", "99999999999999999999999999"] {
            let started = Instant::now();
            // The body is never sent: an answer proves the server did not wait for it.
            let request = format!("POST /metrics HTTP/1.1\r\nContent-Length: {length}\r\n\r\n");
            let reply = exchange(server.local_addr(), request.as_bytes());
            assert_eq!(reply.status, 413, "{length}");
            assert!(started.elapsed() < PROMPT, "{length}: {:?}", started.elapsed());
        }
        assert_eq!(get(server.local_addr(), "/metrics").status, 200);
    }

    #[test]
    fn chunked_body_is_411_and_huge_head_is_431() {
        let (server, _) = test_server();
        let reply =
            exchange(server.local_addr(), b"POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(reply.status, 411);
        let padding = format!("X-Pad: {}\r\n", "p".repeat(100)).repeat(200);
        let reply =
            exchange(server.local_addr(), format!("GET /metrics HTTP/1.1\r\n{padding}\r\n").as_bytes());
        assert_eq!(reply.status, 431);
    }

    #[test]
    fn garbage_does_not_kill_the_server() {
        let (server, _) = test_server();
        for garbage in [
            &b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"[..],
            b"GET\r\n\r\n",
            b"GET /metrics\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"G@T /metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics HTTP/9.9\r\n\r\n",
        ] {
            let reply = exchange(server.local_addr(), garbage);
            assert!(
                matches!(reply.status, 400 | 505),
                "{:?} -> {}",
                String::from_utf8_lossy(garbage),
                reply.status
            );
        }
        // A client that hangs up half way through its request.
        let mut stream = TcpStream::connect(server.local_addr()).unwrap();
        stream.write_all(b"GET /metr").unwrap();
        drop(stream);
        let reply = get(server.local_addr(), "/metrics");
        assert_eq!((reply.status, reply.body()), (200, METRICS));
    }

    #[test]
    fn silent_clients_do_not_block_a_scrape() {
        let (server, _) = test_server();
        // All handlers but one are stuck on clients that connect and send nothing.
        let silent: Vec<TcpStream> =
            (0..WORKERS - 1).map(|_| TcpStream::connect(server.local_addr()).unwrap()).collect();
        thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        let reply = get(server.local_addr(), "/metrics");
        assert_eq!(reply.status, 200);
        assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
        drop(silent);
    }

    #[test]
    fn silent_client_gets_408() {
        let (server, _) = test_server();
        let mut stream = TcpStream::connect(server.local_addr()).unwrap();
        assert_eq!(read_reply(&mut stream).status, 408);
    }

    #[test]
    fn panicking_render_is_500_and_the_server_lives_on() {
        let server =
            start("127.0.0.1:0", Arc::new(|| -> String { panic!("render failed") }), Arc::new(|| true))
                .unwrap();
        for _ in 0..WORKERS + 1 {
            assert_eq!(get(server.local_addr(), "/metrics").status, 500);
        }
        assert_eq!(get(server.local_addr(), "/healthz").status, 200);
    }

    #[test]
    fn stop_is_prompt_and_closes_the_port() {
        let (server, _) = test_server();
        let addr = server.local_addr();
        // A handler blocked on a silent client must not hold up the stop.
        let mut silent = TcpStream::connect(addr).unwrap();
        thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        server.stop();
        assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
        silent.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        // The handler's socket was shut down: the client sees the end of the stream, not a timeout.
        assert!(silent.read_to_end(&mut Vec::new()).is_ok());
        assert!(TcpStream::connect(addr).is_err());
    }

    #[test]
    fn drop_stops_the_server() {
        let (server, _) = test_server();
        let addr = server.local_addr();
        let started = Instant::now();
        drop(server);
        assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
        assert!(TcpStream::connect(addr).is_err());
    }

    #[test]
    fn listen_errors_say_what_to_do() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let error = start(&addr, Arc::new(String::new), Arc::new(|| true)).unwrap_err();
        assert!(matches!(error, HttpError::AddrInUse { .. }), "{error:?}");
        assert_eq!(
            error.to_string(),
            format!("cannot listen on {addr}: address in use; pass --listen with a free port")
        );

        let error = start("not an address", Arc::new(String::new), Arc::new(|| true)).unwrap_err();
        assert!(matches!(error, HttpError::BadAddress { .. }), "{error:?}");
        assert!(error.to_string().contains("--listen"), "{error}");
        assert!(!error.to_string().contains('\n'));
    }

    #[test]
    fn parse_head_reads_method_path_and_length() {
        let head =
            parse_head(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\ncontent-length:  12 \r\n\r\n").unwrap();
        assert_eq!(head.request, Request { method: "GET".to_owned(), path: "/metrics".to_owned() });
        assert_eq!(head.content_length, 12);
        assert_eq!(
            parse_head(b"GET / HTTP/1.1\r\nX : y\r\n\r\n"),
            Err(Reject::BadRequest("malformed header name"))
        );
        assert_eq!(
            parse_head(b"GET / HTTP/1.1\r\n folded: x\r\n\r\n"),
            Err(Reject::BadRequest("malformed header name"))
        );
        assert_eq!(parse_head(b"GET / HTTP/2.0\r\n\r\n"), Err(Reject::Version));
        assert_eq!(parse_head(b"GET  / HTTP/1.1\r\n\r\n"), Err(Reject::BadRequest("malformed request line")));
    }

    #[test]
    fn head_end_finds_the_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nbody"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nbody"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n"), None);
        assert_eq!(head_end(b""), None);
    }

    proptest! {
        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = head_end(&bytes);
            let _ = check_partial_head(&bytes);
            let _ = parse_head(&bytes);
        }

        #[test]
        fn parsing_request_shaped_text_never_panics(
            text in "[A-Z]{0,8} [ -~]{0,40} HTTP/[0-9.]{0,4}\r\n([!-9;-~]{0,12}:[ -~]{0,20}\r\n){0,5}\r\n"
        ) {
            let _ = parse_head(text.as_bytes());
        }
    }
}
