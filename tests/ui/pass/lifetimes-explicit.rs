use retry_runtime::{retry, Classify, ErrorClass};

#[derive(Debug)]
pub struct Error;

impl Classify for Error {
    fn classify(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

struct Parser<'src> {
    src: &'src str,
}

impl<'src> Parser<'src> {
    #[retry]
    async fn token<'p>(&'p self, at: usize) -> Result<&'src str, Error>
    where
        'src: 'p,
    {
        self.src.get(at..).ok_or(Error)
    }
}

fn main() {
    let p = Parser { src: "abc" };
    drop(p.token(1));
}
