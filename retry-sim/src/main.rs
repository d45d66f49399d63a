fn main() {
    let t = std::time::Instant::now();
    let pts = retry_sim::scenario::brooker::run(&retry_sim::scenario::brooker::Config {
        clients: vec![10, 50, 100, 200],
        runs: 3,
        seed: 1,
    });
    for p in pts {
        println!(
            "{} {:>20} calls {:>10.0} time {:>8.0} ms",
            p.clients,
            p.backoff.name(),
            p.calls,
            p.time_ms
        );
    }
    eprintln!("{:?}", t.elapsed());
}
