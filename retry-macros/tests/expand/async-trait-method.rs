// A method inside an `#[async_trait]` impl reaches `#[retry]` already rewritten by async-trait
// (this is its output for `async fn fetch(&self, id: u32, body: String) -> Result<String, E>`):
// the retry loop replaces the user's block inside the boxed `async move`, after the arguments
// were moved in, and `idempotent_if` names `self` as async-trait renamed it.
#[retry(clone(body), idempotent_if = self.safe)]
fn fetch<'life0, 'async_trait>(
    &'life0 self,
    id: u32,
    body: String,
) -> ::core::pin::Pin<
    Box<dyn ::core::future::Future<Output = Result<String, Error>> + ::core::marker::Send + 'async_trait>,
>
where
    'life0: 'async_trait,
    Self: 'async_trait,
{
    Box::pin(async move {
        if let ::core::option::Option::Some(__ret) = ::core::option::Option::None::<Result<String, Error>> {
            #[allow(unreachable_code)]
            return __ret;
        }
        let __self = self;
        let id = id;
        let body = body;
        let __ret: Result<String, Error> = {
            __self.send(id, body).await
        };
        #[allow(unreachable_code)]
        __ret
    })
}
