use retry_runtime::Classify;

#[derive(Classify)]
union Error {
    code: u32,
    class: f32,
}

fn main() {}
