// The AWS SDKs' own settings too, under a profile: the `const` that asks for the runtime's
// `aws-config` feature, spelled at the key.
#[retry(profile = "billing", aws_config = true)]
async fn get_object(key: &str) -> Result<Object, StoreError> {
    store::get(key).await
}
