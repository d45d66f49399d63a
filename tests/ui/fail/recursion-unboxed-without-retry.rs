// The same function as `recursion-unboxed.rs`, without `#[retry]`: the same error (E0733).
#[derive(Debug)]
struct Error;

async fn depth(n: u32) -> Result<u32, Error> {
    if n == 0 {
        return Ok(0);
    }
    Ok(depth(n - 1).await? + 1)
}

fn main() {}
