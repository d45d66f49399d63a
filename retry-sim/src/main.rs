fn main() {
    let t = std::time::Instant::now();
    for s in retry_sim::scenario::throttling::run(&retry_sim::scenario::throttling::Config::full())
    {
        println!(
            "{:>10} goodput {:.3} throttled {:.3} load {:.3}",
            s.strategy.name(),
            s.goodput,
            s.throttled,
            s.load
        );
        if s.strategy == retry_sim::sim::Strategy::Adaptive {
            for (i, b) in s.run.series.bins.iter().enumerate().step_by(5) {
                println!(
                    "{i} {:?} fill {:.1}",
                    b,
                    s.run.fill_rate.get(i).copied().unwrap_or(0.0)
                );
            }
        }
    }
    eprintln!("{:?}", t.elapsed());
}
