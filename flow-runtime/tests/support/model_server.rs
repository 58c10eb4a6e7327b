//! A small HTTP/1.1 server on 127.0.0.1 that plays a model API for the HTTP client tests
//! (OpenAI, Anthropic, hostile servers): it reads each request whole, keeps it, and answers
//! with canned responses written in pieces.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The head of a streamed (server-sent events) response; its events follow, the body
/// delimited by the end of the connection.
pub const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

/// A whole response with the given headers, the body delimited by the end of the connection.
pub fn response(status: &str, headers: &[(&str, &str)], body: &str) -> String {
    let headers: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    format!("HTTP/1.1 {status}\r\n{headers}Connection: close\r\n\r\n{body}")
}

/// A request as it arrived: its head and its `Content-Length` body.
#[derive(Debug, Clone)]
pub struct Request {
    head: String,
    body: Vec<u8>,
}

impl Request {
    /// The first line: `POST /v1/messages HTTP/1.1`.
    pub fn request_line(&self) -> &str {
        self.head.lines().next().unwrap_or_default()
    }

    /// The value of header `name` (any case), if it was sent.
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

/// Reads one request whole (its head, then as many body bytes as its `Content-Length` says).
/// `Err` says where the client hung up.
pub async fn read_request(socket: &mut TcpStream) -> Result<Request, &'static str> {
    let mut data = Vec::new();
    let head_end = loop {
        if !read_more(socket, &mut data).await {
            return Err("client closed before sending a request");
        }
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let mut request = Request {
        head: String::from_utf8_lossy(&data[..head_end]).to_string(),
        body: Vec::new(),
    };
    let length: usize = request
        .header("content-length")
        .map_or(0, |v| v.parse().unwrap());
    while data.len() < head_end + length {
        if !read_more(socket, &mut data).await {
            return Err("client closed in the middle of its request");
        }
    }
    request.body = data[head_end..head_end + length].to_vec();
    Ok(request)
}

/// Reads what has arrived onto `data`; false once the client hung up.
async fn read_more(socket: &mut TcpStream, data: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    match socket.read(&mut buf).await {
        Ok(n) if n > 0 => {
            data.extend_from_slice(&buf[..n]);
            true
        }
        _ => false,
    }
}

/// A request the server received, its body parsed as JSON.
#[derive(Debug, Clone)]
pub struct Received {
    /// The first line: `POST /v1/messages HTTP/1.1`.
    pub request_line: String,
    /// The JSON body.
    pub body: Value,
    request: Request,
}

impl Received {
    /// The value of header `name` (any case), if it was sent.
    pub fn header(&self, name: &str) -> Option<String> {
        self.request.header(name)
    }
}

/// A running server: where to reach it and what it received.
pub struct Server {
    /// `http://127.0.0.1:PORT` followed by the base path given to [`serve`].
    pub base_url: String,
    /// Every request, in order.
    pub received: Arc<Mutex<Vec<Received>>>,
}

/// Answers each connection with the next of `responses` (written in the given pieces), then
/// with `exhausted`. The base URL ends with `path` (`/v1`, or empty).
pub async fn serve(path: &str, responses: Vec<Vec<String>>, exhausted: String) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}{path}", listener.local_addr().unwrap());
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    tokio::spawn(async move {
        let mut responses = responses.into_iter();
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let request = read_request(&mut socket)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            log.lock().unwrap().push(Received {
                request_line: request.request_line().to_owned(),
                body: serde_json::from_slice(&request.body).unwrap(),
                request,
            });
            let pieces = responses.next().unwrap_or_else(|| vec![exhausted.clone()]);
            for piece in pieces {
                if socket.write_all(piece.as_bytes()).await.is_err() {
                    break;
                }
                let _ = socket.flush().await;
                tokio::task::yield_now().await;
            }
            let _ = socket.shutdown().await;
        }
    });
    Server { base_url, received }
}
