//! Request bodies that can be sent again: [`ReplayBody`], for the bodies that are values
//! (cloned) and for the boxed, streaming ones (buffered while their frames are ready).

use bytes::{Buf, Bytes};
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

/// A request body that the layer can send again, or not.
///
/// [`replay`](Self::replay) is called once when the request arrives, before its first attempt,
/// and then on the copy it returned before each later attempt. `None` means the body cannot
/// be replayed: the request is sent once and never retried, whatever the failure.
///
/// | body | replayed |
/// |---|---|
/// | `http_body_util::Full`, `Empty`, `String`, and the non-streaming values `Bytes`, `Vec<u8>`, `&'static str`, `&'static [u8]`, `()` | always (cloned) |
/// | `http_body_util::combinators::BoxBody<Bytes, E>`, `UnsyncBoxBody<Bytes, E>`, `tonic::body::Body` (feature `tonic`) | when the whole body is ready when the request is made, and not larger than the limit ([`Http::replay_limit`](super::Http::replay_limit)): it is buffered once and replayed from the buffer |
/// | `hyper::body::Incoming` (feature `hyper`) | never: it streams from a connection |
///
/// A boxed body is polled, when the request is made, for the frames it already has (a
/// unary gRPC request, a body built from bytes or from a finished stream has them all). If it
/// ends before it would wait, and within the limit, it is replayable. If it would wait (a
/// stream still being produced), or it is longer than the limit, it is sent once: the frames
/// already taken go first, then the rest of the body, untouched.
///
/// Implement it for a body type of your own; a body that is a value is replayed by cloning it:
///
/// ```
/// use retry_runtime::tower::ReplayBody;
///
/// #[derive(Clone)]
/// struct Json(bytes::Bytes);
///
/// impl ReplayBody for Json {
///     fn replay(&mut self, _limit: usize) -> Option<Self> {
///         Some(self.clone())
///     }
/// }
/// ```
pub trait ReplayBody: Sized {
    /// A copy of this body for a later attempt, or `None` if it cannot be replayed. It may
    /// buffer up to `limit` bytes of the body, and replace `self` with a body that sends the
    /// same bytes.
    fn replay(&mut self, limit: usize) -> Option<Self>;
}

macro_rules! replay_by_clone {
    ($($(#[$doc:meta])* [$($generics:tt)*] $ty:ty;)*) => {
        $(
            $(#[$doc])*
            impl<$($generics)*> ReplayBody for $ty {
                fn replay(&mut self, _: usize) -> Option<Self> {
                    Some(self.clone())
                }
            }
        )*
    };
}

replay_by_clone! {
    /// Cloned (a `Full<Bytes>` shares its bytes).
    [D: Clone] http_body_util::Full<D>;
    /// Cloned.
    [D] http_body_util::Empty<D>;
    /// Cloned.
    [] String;
    /// Cloned.
    [] Vec<u8>;
    /// Cloned (shares its bytes).
    [] Bytes;
    /// Cloned.
    [] &'static str;
    /// Cloned.
    [] &'static [u8];
    /// No body.
    [] ();
}

/// Buffered while ready, up to the limit (see [`ReplayBody`]).
impl<E> ReplayBody for http_body_util::combinators::BoxBody<Bytes, E>
where
    E: Send + Sync + 'static,
{
    fn replay(&mut self, limit: usize) -> Option<Self> {
        replay_boxed(self, limit, |r| Self::new(r.into_body()), Self::new)
    }
}

/// Buffered while ready, up to the limit (see [`ReplayBody`]).
impl<E> ReplayBody for http_body_util::combinators::UnsyncBoxBody<Bytes, E>
where
    E: Send + 'static,
{
    fn replay(&mut self, limit: usize) -> Option<Self> {
        replay_boxed(self, limit, |r| Self::new(r.into_body()), Self::new)
    }
}

/// Buffered while ready, up to the limit (see [`ReplayBody`]): a unary call's message is
/// ready when the request is made, so a unary call is replayable; a client stream still being
/// produced is sent once.
#[cfg(feature = "tonic")]
impl ReplayBody for ::tonic::body::Body {
    fn replay(&mut self, limit: usize) -> Option<Self> {
        replay_boxed(self, limit, Self::new, Self::new)
    }
}

/// [`ReplayBody::replay`] for a boxed body, made from a [`Replayed`] body by `replayed` and
/// from a [`Resumed`] one by `resumed`.
fn replay_boxed<B>(
    body: &mut B,
    limit: usize,
    replayed: impl Fn(Replayed) -> B,
    resumed: impl FnOnce(Resumed<B>) -> B,
) -> Option<B>
where
    B: Body<Data = Bytes> + Default + Unpin,
{
    match buffer(body, limit) {
        Buffered::Whole(frames) => {
            *body = replayed(frames.clone());
            Some(replayed(frames))
        }
        // Nothing was taken: the body is sent as it is.
        Buffered::Partly(frames, None) if frames.is_empty() => None,
        Buffered::Partly(frames, failed) => {
            let rest = match failed {
                Some(e) => Rest::Failed(Some(e)),
                None => Rest::Body(std::mem::take(body)),
            };
            *body = resumed(Resumed { frames, rest });
            None
        }
    }
}

/// Never: the body streams from a connection (a proxy's request), it is sent once.
#[cfg(feature = "hyper")]
impl ReplayBody for ::hyper::body::Incoming {
    fn replay(&mut self, _: usize) -> Option<Self> {
        None
    }
}

/// One frame of a buffered body.
#[derive(Clone, Debug)]
enum Chunk {
    Data(Bytes),
    Trailers(HeaderMap),
}

impl Chunk {
    fn into_frame(self) -> Frame<Bytes> {
        match self {
            Chunk::Data(data) => Frame::data(data),
            Chunk::Trailers(trailers) => Frame::trailers(trailers),
        }
    }
}

/// What polling a body for its ready frames found.
enum Buffered<E> {
    /// The whole body.
    Whole(Replayed),
    /// Its first frames, then: the rest is still in the body (`None`), or the body failed with
    /// this error.
    Partly(VecDeque<Chunk>, Option<E>),
}

/// Takes the frames `body` has ready, up to `limit` bytes of data, without waiting: it is
/// polled with a waker that does nothing, so a body that is not ready is left to be polled
/// again, by whoever sends it, with a waker of its own.
fn buffer<B>(body: &mut B, limit: usize) -> Buffered<B::Error>
where
    B: Body + Unpin,
{
    let mut frames = VecDeque::new();
    if body
        .size_hint()
        .lower()
        .try_into()
        .map_or(true, |lower: usize| lower > limit)
    {
        // Larger than the limit: not a byte taken.
        return Buffered::Partly(frames, None);
    }
    let mut cx = Context::from_waker(Waker::noop());
    let mut size = 0usize;
    loop {
        if body.is_end_stream() {
            return Buffered::Whole(Replayed::new(frames));
        }
        match Pin::new(&mut *body).poll_frame(&mut cx) {
            Poll::Ready(None) => return Buffered::Whole(Replayed::new(frames)),
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(mut data) => {
                    let data = data.copy_to_bytes(data.remaining());
                    size = size.saturating_add(data.len());
                    frames.push_back(Chunk::Data(data));
                    if size > limit {
                        return Buffered::Partly(frames, None);
                    }
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        frames.push_back(Chunk::Trailers(trailers));
                    }
                }
            },
            Poll::Ready(Some(Err(e))) => return Buffered::Partly(frames, Some(e)),
            Poll::Pending => return Buffered::Partly(frames, None),
        }
    }
}

/// A buffered body, sent from the start by each copy (the copies share the bytes).
#[derive(Clone, Debug)]
struct Replayed {
    frames: Arc<[Chunk]>,
    next: usize,
}

impl Replayed {
    fn new(frames: VecDeque<Chunk>) -> Replayed {
        Replayed {
            frames: frames.into_iter().collect(),
            next: 0,
        }
    }

    /// As a body with the error type a boxed body needs (it never fails).
    fn into_body<E>(self) -> http_body_util::combinators::MapErr<Replayed, fn(Infallible) -> E> {
        http_body_util::BodyExt::map_err(self, |never| match never {})
    }
}

impl Body for Replayed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.frames.get(self.next).cloned();
        if next.is_some() {
            self.next += 1;
        }
        Poll::Ready(next.map(|chunk| Ok(chunk.into_frame())))
    }

    fn is_end_stream(&self) -> bool {
        self.next >= self.frames.len()
    }

    fn size_hint(&self) -> SizeHint {
        let len = self.frames[self.next.min(self.frames.len())..]
            .iter()
            .map(|c| match c {
                Chunk::Data(d) => d.len() as u64,
                Chunk::Trailers(_) => 0,
            })
            .sum();
        SizeHint::with_exact(len)
    }
}

/// What follows the frames taken from a body that is sent once.
enum Rest<B: Body> {
    /// The body itself, where it was left.
    Body(B),
    /// The body failed with this error (reported once).
    Failed(Option<B::Error>),
}

/// A body that is sent once: the frames taken while looking for its end, then the rest.
struct Resumed<B: Body> {
    frames: VecDeque<Chunk>,
    rest: Rest<B>,
}

// Nothing in it is pinned: the body it resumes is `Unpin`, and the error is moved out.
impl<B: Body> Unpin for Resumed<B> {}

impl<B> Body for Resumed<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        if let Some(chunk) = this.frames.pop_front() {
            return Poll::Ready(Some(Ok(chunk.into_frame())));
        }
        match &mut this.rest {
            Rest::Body(body) => Pin::new(body).poll_frame(cx),
            Rest::Failed(error) => Poll::Ready(error.take().map(Err)),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_empty()
            && match &self.rest {
                Rest::Body(body) => body.is_end_stream(),
                Rest::Failed(error) => error.is_none(),
            }
    }

    fn size_hint(&self) -> SizeHint {
        let taken: u64 = self
            .frames
            .iter()
            .map(|c| match c {
                Chunk::Data(d) => d.len() as u64,
                Chunk::Trailers(_) => 0,
            })
            .sum();
        let rest = match &self.rest {
            Rest::Body(body) => body.size_hint(),
            Rest::Failed(_) => SizeHint::with_exact(0),
        };
        let mut hint = SizeHint::new();
        hint.set_lower(rest.lower().saturating_add(taken));
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper.saturating_add(taken));
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::combinators::BoxBody;
    use http_body_util::{BodyExt, Full};

    type Boxed = BoxBody<Bytes, std::io::Error>;

    /// A body whose chunks each come after one `Pending` (it wakes its task at once): a
    /// stream still being produced when the request is made.
    struct Trickle(VecDeque<&'static str>, bool);

    impl Body for Trickle {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            if !std::mem::replace(&mut self.1, false) {
                self.1 = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Poll::Ready(self.0.pop_front().map(|s| Ok(Frame::data(Bytes::from(s)))))
        }
    }

    /// A body whose frames are all ready.
    struct Ready(VecDeque<Result<Frame<Bytes>, std::io::Error>>);

    impl Body for Ready {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            Poll::Ready(self.0.pop_front())
        }
    }

    fn ready(frames: Vec<Result<Frame<Bytes>, std::io::Error>>) -> Boxed {
        BoxBody::new(Ready(frames.into()))
    }

    fn chunks(chunks: &'static [&'static str]) -> Boxed {
        ready(
            chunks
                .iter()
                .map(|s| Ok(Frame::data(Bytes::from(*s))))
                .collect(),
        )
    }

    async fn text<B>(body: B) -> String
    where
        B: Body<Data = Bytes>,
        B::Error: std::fmt::Debug,
    {
        let bytes = body.collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn a_full_body_is_cloned() {
        let mut body = Full::new(Bytes::from_static(b"order 7"));
        let copy = body.replay(0).unwrap();
        assert_eq!(text(copy).await, "order 7");
        assert_eq!(text(body).await, "order 7");
    }

    #[tokio::test]
    async fn a_boxed_body_that_is_ready_is_buffered_and_replayed_from_the_start() {
        let mut body = chunks(&["ab", "cd", "ef"]);
        let mut copy = body.replay(1 << 20).unwrap();
        let again = copy.replay(1 << 20).unwrap();
        assert_eq!(copy.size_hint().exact(), Some(6));
        assert_eq!(text(body).await, "abcdef");
        assert_eq!(text(copy).await, "abcdef");
        assert_eq!(text(again).await, "abcdef");
    }

    #[tokio::test]
    async fn a_body_still_being_produced_is_sent_once_and_whole() {
        let mut body = BoxBody::new(Trickle(VecDeque::from(["one ", "two"]), false));
        assert!(body.replay(1 << 20).is_none());
        assert_eq!(text(body).await, "one two");
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_sent_once_and_whole() {
        let mut body = chunks(&["1234", "5678", "9"]);
        assert!(body.replay(5).is_none(), "8 bytes taken, over 5");
        assert_eq!(text(body).await, "123456789");

        // A body whose size says it is over the limit is not polled at all.
        let mut body: Boxed =
            BoxBody::new(Full::new(Bytes::from_static(b"123456")).map_err(|e| match e {}));
        assert!(body.replay(5).is_none());
        assert_eq!(text(body).await, "123456");
    }

    #[tokio::test]
    async fn a_body_that_fails_is_sent_once_with_its_error() {
        let frames = vec![
            Ok(Frame::data(Bytes::from_static(b"ab"))),
            Err(std::io::Error::other("disk")),
        ];
        let mut body = ready(frames);
        assert!(body.replay(1 << 20).is_none());
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(first, "ab");
        assert_eq!(body.frame().await.unwrap().unwrap_err().to_string(), "disk");
        assert!(body.frame().await.is_none());
    }

    #[tokio::test]
    async fn trailers_are_replayed() {
        let mut trailers = HeaderMap::new();
        trailers.insert("x-checksum", "42".parse().unwrap());
        let frames = vec![
            Ok(Frame::data(Bytes::from_static(b"ab"))),
            Ok(Frame::trailers(trailers)),
        ];
        let mut body = ready(frames);
        let copy = body.replay(1 << 20).unwrap();
        let collected = copy.collect().await.unwrap();
        assert_eq!(collected.trailers().unwrap()["x-checksum"], "42");
        assert_eq!(collected.to_bytes(), "ab");
    }

    #[cfg(feature = "tonic")]
    #[tokio::test]
    async fn a_tonic_body_is_buffered() {
        let mut body = ::tonic::body::Body::new(chunks(&["grpc ", "frame"]));
        let copy = body.replay(1 << 20).unwrap();
        assert_eq!(text(copy).await, "grpc frame");
        assert_eq!(text(body).await, "grpc frame");
    }
}
