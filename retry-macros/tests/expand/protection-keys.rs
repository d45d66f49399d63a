// A budget shared by the partition, and a circuit breaker named by path.
#[retry(partition = "store", budget = "20%", breaker = STORE_BREAKER)]
async fn get_object(key: &str) -> Result<Object, StoreError> {
    store::get(key).await
}
