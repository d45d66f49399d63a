//! The socket of a test server's connection that a handler can ask to reset: dropping it then
//! sends RST (zero linger). Shared by the HTTP test servers (`http_server`, `keyed_server`).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The connection's socket; when the handler asked for a reset, dropping it sends RST.
pub struct Resettable {
    pub stream: TcpStream,
    pub reset: Arc<AtomicBool>,
}

impl Drop for Resettable {
    fn drop(&mut self) {
        if self.reset.load(Ordering::SeqCst) {
            let _ = self.stream.set_zero_linger();
        }
    }
}

impl AsyncRead for Resettable {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Resettable {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
