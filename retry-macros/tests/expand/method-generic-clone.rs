// `&mut self`, generics with a where clause, a `mut` owned argument cloned for each attempt,
// idempotency decided per call, a named partition.
#[retry(partition = "uploads", clone(body), idempotent_if = self.replayable(&key))]
pub(crate) async fn put<K, B>(&mut self, key: K, mut body: B) -> Result<Etag, UploadError>
where
    K: AsRef<str> + Send,
    B: Clone + Into<Vec<u8>> + Send,
{
    body = self.compress(body);
    self.conn.put(key.as_ref(), body.into()).await
}
