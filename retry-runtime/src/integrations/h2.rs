//! HTTP/2's "not processed" signals (feature `http2`): `Classify` for `h2::Error`, the error
//! hyper's, reqwest's and tonic's clients carry among their causes when a stream fails.
//!
//! RFC 9113 section 8.7 names two ways for a server to say that it did not process a request,
//! so that "requests on streams with higher numbers are therefore guaranteed to be safe to
//! retry": a `RST_STREAM` frame with `REFUSED_STREAM` ("the stream is being closed prior to any
//! processing having occurred"), and a `GOAWAY` frame, whose last stream identifier is the
//! highest that might have been processed (section 6.8: the streams above it "were not
//! processed", and may be retried on a new connection).
//!
//! h2 reports them to the client's streams as:
//!
//! - `RST_STREAM` received: an error with `is_reset()` and `is_remote()`, whose `reason()` is
//!   the frame's. Only `REFUSED_STREAM` says the server did nothing; a reset with any other
//!   reason (`INTERNAL_ERROR`, `CANCEL`) may come after the server acted on the request.
//! - `GOAWAY` received: h2 hands an error with `is_go_away()` and `is_remote()`, whatever the
//!   frame's reason, to the streams whose identifiers are above the frame's last stream id
//!   (`Streams::recv_go_away` in h2's `proto/streams/streams.rs`), and to a request opened on
//!   the connection afterwards (the connection's error, returned before a stream is made). A
//!   stream at or below the last stream id is left to complete; if the connection closes under
//!   it, it fails with a broken pipe (`io::Error`), not with the `GOAWAY`.
//!
//! So both are `NotSent`, the class of a request that provably did not take effect, which a
//! function that is not idempotent retries too. A `GOAWAY` with `ENHANCE_YOUR_CALM` (the
//! server finds the client's load excessive) is `Throttling`: as safe, and the adaptive rate
//! limiter slows down on it.
//!
//! reqwest 0.13's client retries the same two signals on its own by default, its
//! "protocol NACKs" (`is_retryable_error` in
//! <https://github.com/seanmonstar/reqwest/blob/v0.13.5/src/retry.rs>): a remote `GOAWAY` with
//! `NO_ERROR` ("a graceful shutdown, try with a new connection") and a remote reset with
//! `REFUSED_STREAM`, found as the `h2::Error` under the `hyper::Error` under the
//! `hyper_util` client's error. It retries a request twice at most; the error that gets through
//! its retries (or that of a client built with `reqwest::retry::never()`) is classified here.
//! Unlike reqwest, a `GOAWAY` of another reason counts too: h2 gives it to the same unprocessed
//! streams. The runtime looks for the `h2::Error` anywhere in the chain of causes, not at a
//! fixed depth, so a client that wraps it otherwise is read the same.

use crate::classify::{Classify, ErrorClass};
use ::h2::Reason;

/// | `h2::Error` | class |
/// |---|---|
/// | a `RST_STREAM` with `REFUSED_STREAM` received: the server refused the stream before processing it | `NotSent` |
/// | a `GOAWAY` received: the stream was above its last stream id, or opened after it | `NotSent` (`Throttling` for `ENHANCE_YOUR_CALM`) |
/// | an I/O error | that error's class |
/// | otherwise (a reset of another reason, an error h2 detected, a misuse) | `Transient` |
impl Classify for ::h2::Error {
    fn classify(&self) -> ErrorClass {
        if let Some(class) = not_processed(self) {
            return class;
        }
        match self.get_io() {
            Some(io) => io.classify(),
            None => ErrorClass::Transient,
        }
    }
}

/// The class of an error by which the server says it did not process the stream
/// (see the [module](self)), or `None` for any other error.
pub(crate) fn not_processed(err: &::h2::Error) -> Option<ErrorClass> {
    if !err.is_remote() {
        return None;
    }
    if err.is_go_away() {
        return Some(if err.reason() == Some(Reason::ENHANCE_YOUR_CALM) {
            ErrorClass::Throttling
        } else {
            ErrorClass::NotSent
        });
    }
    (err.is_reset() && err.reason() == Some(Reason::REFUSED_STREAM)).then_some(ErrorClass::NotSent)
}

/// h2's own client and server over an in-memory pipe: the errors a client's stream gets from
/// the frames the server sends (h2 makes its remote errors only from frames it receives).
#[cfg(all(
    test,
    feature = "http",
    not(all(target_arch = "wasm32", target_os = "unknown"))
))]
mod tests {
    use super::*;
    use ::h2::{client, server};
    use std::io::Cursor;
    use tokio::io::{AsyncRead, AsyncReadExt, DuplexStream};

    /// How the server answers the client's request.
    #[derive(Clone, Copy)]
    enum Answer {
        /// Resets the stream with the reason.
        Reset(Reason),
        /// Sends a `GOAWAY` with the reason and last stream id 0 once the request's `HEADERS`
        /// have arrived, before h2 reads them: the stream is above the last stream id.
        GoAway(Reason),
        /// Closes the connection once the request has arrived, without a frame.
        Hangup,
        /// Takes the request in, then sends a `GOAWAY` with the reason, whose last stream id is
        /// the request's, and closes the connection.
        GoAwayAfter(Reason),
    }

    /// The bytes of the client's preface and frames up to its first `HEADERS` frame, read
    /// from `io` as they come.
    async fn until_headers(io: &mut (impl AsyncRead + Unpin)) -> Vec<u8> {
        let mut seen = vec![0; 24];
        io.read_exact(&mut seen).await.unwrap();
        loop {
            let mut head = [0; 9];
            io.read_exact(&mut head).await.unwrap();
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0; len];
            io.read_exact(&mut payload).await.unwrap();
            seen.extend_from_slice(&head);
            seen.extend_from_slice(&payload);
            if head[3] == 0x1 {
                return seen;
            }
        }
    }

    async fn serve(far: DuplexStream, answer: Answer) {
        match answer {
            Answer::Reset(reason) => {
                let mut conn = server::handshake(far).await.unwrap();
                let (_, mut respond) = conn.accept().await.unwrap().unwrap();
                respond.send_reset(reason);
                std::future::poll_fn(|cx| conn.poll_closed(cx)).await.ok();
            }
            Answer::GoAwayAfter(reason) => {
                let mut conn = server::handshake(far).await.unwrap();
                let accepted = conn.accept().await.unwrap().unwrap();
                conn.abrupt_shutdown(reason);
                std::future::poll_fn(|cx| conn.poll_closed(cx)).await.ok();
                drop(accepted);
            }
            Answer::Hangup => {
                let mut conn = server::handshake(far).await.unwrap();
                let accepted = conn.accept().await.unwrap().unwrap();
                drop(conn);
                drop(accepted);
            }
            Answer::GoAway(reason) => {
                let (mut read, write) = tokio::io::split(far);
                let seen = until_headers(&mut read).await;
                let io = tokio::io::join(Cursor::new(seen).chain(read), write);
                let mut conn = server::handshake(io).await.unwrap();
                // Nothing processed yet: the GOAWAY's last stream id is 0.
                conn.abrupt_shutdown(reason);
                std::future::poll_fn(|cx| conn.poll_closed(cx)).await.ok();
            }
        }
    }

    /// The error of one GET on a fresh connection to a server that answers with `answer`.
    async fn error_of(answer: Answer) -> ::h2::Error {
        let (near, far) = tokio::io::duplex(64 * 1024);
        let server = tokio::spawn(serve(far, answer));
        let (mut send, conn) = client::handshake(near).await.unwrap();
        let driver = tokio::spawn(conn);
        let request = http::Request::get("http://loopback/").body(()).unwrap();
        let (response, _) = send.send_request(request, true).unwrap();
        let err = response.await.unwrap_err();
        driver.abort();
        server.abort();
        err
    }

    #[tokio::test]
    async fn a_refused_stream_was_not_sent() {
        let err = error_of(Answer::Reset(Reason::REFUSED_STREAM)).await;
        assert!(err.is_reset() && err.is_remote(), "{err:?}");
        assert_eq!(err.classify(), ErrorClass::NotSent);
    }

    #[tokio::test]
    async fn a_reset_of_another_reason_may_have_been_processed() {
        for reason in [Reason::INTERNAL_ERROR, Reason::CANCEL, Reason::NO_ERROR] {
            let err = error_of(Answer::Reset(reason)).await;
            assert!(err.is_reset() && err.is_remote(), "{err:?}");
            assert_eq!(err.reason(), Some(reason));
            assert_eq!(err.classify(), ErrorClass::Transient, "{reason:?}");
        }
    }

    #[tokio::test]
    async fn a_stream_above_a_goaway_was_not_sent() {
        for (reason, class) in [
            (Reason::NO_ERROR, ErrorClass::NotSent),
            (Reason::INTERNAL_ERROR, ErrorClass::NotSent),
            (Reason::ENHANCE_YOUR_CALM, ErrorClass::Throttling),
        ] {
            let err = error_of(Answer::GoAway(reason)).await;
            assert!(err.is_go_away() && err.is_remote(), "{err:?}");
            assert_eq!(err.reason(), Some(reason));
            assert_eq!(err.classify(), class, "{reason:?}");
        }
    }

    /// The stream at or below a GOAWAY's last stream id may have been processed: the GOAWAY
    /// does not say otherwise, and the closed connection fails it with a broken pipe.
    #[tokio::test]
    async fn a_stream_a_goaway_covers_may_have_been_processed() {
        for reason in [Reason::NO_ERROR, Reason::INTERNAL_ERROR] {
            let err = error_of(Answer::GoAwayAfter(reason)).await;
            assert!(!err.is_go_away(), "{err:?}");
            assert_eq!(err.classify(), ErrorClass::Transient, "{reason:?}");
        }
    }

    #[tokio::test]
    async fn a_connection_closed_under_a_stream_is_its_io_error() {
        let err = error_of(Answer::Hangup).await;
        let io = err.get_io().expect("an I/O error");
        assert_eq!(io.kind(), std::io::ErrorKind::BrokenPipe, "{err:?}");
        assert_eq!(err.classify(), ErrorClass::Transient);
    }

    /// A `tonic::Status` made from a stream's error keeps it among its causes (tonic's
    /// `Status::from_error`), whose say comes before the code tonic chose: `UNAVAILABLE` for a
    /// refused stream, `INTERNAL` for a `GOAWAY` or a reset.
    #[cfg(feature = "tonic")]
    #[tokio::test]
    async fn a_tonic_status_is_classified_by_the_stream_error_among_its_causes() {
        use ::tonic::Status;
        let status = |mut status: Status, err: ::h2::Error| {
            status.set_source(std::sync::Arc::new(err));
            status
        };
        let refused = error_of(Answer::Reset(Reason::REFUSED_STREAM)).await;
        let refused = status(Status::unavailable("h2 protocol error"), refused);
        assert_eq!(refused.classify(), ErrorClass::NotSent);
        let above = error_of(Answer::GoAway(Reason::NO_ERROR)).await;
        let above = status(Status::internal("h2 protocol error"), above);
        assert_eq!(above.classify(), ErrorClass::NotSent);
        let reset = error_of(Answer::Reset(Reason::INTERNAL_ERROR)).await;
        let reset = status(Status::internal("h2 protocol error"), reset);
        assert_eq!(reset.classify(), ErrorClass::Transient);
    }

    #[test]
    fn a_reason_not_received_from_the_peer_is_transient() {
        // What `From<Reason>` makes: no frame from the peer said it.
        let err = ::h2::Error::from(Reason::REFUSED_STREAM);
        assert!(!err.is_remote() && !err.is_reset());
        assert_eq!(err.classify(), ErrorClass::Transient);
    }
}
