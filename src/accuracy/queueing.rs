//! Closed forms for a queue's mean wait: Erlang C for M/M/c (A. K. Erlang 1917) and
//! Pollaczek–Khinchine for M/D/1 (both in Kleinrock, *Queueing Systems* vol. 1, 1975): the
//! "published figures" of the queueing rows.

/// Mean time in queue (seconds) of `servers` servers with Poisson arrivals at `lambda`/s and
/// service times of mean `service_s`: exponential (M/M/c, Erlang C) or fixed (M/D/1, one
/// server). The caller keeps the utilization below 1.
pub fn waiting_time(exponential: bool, servers: u32, lambda: f64, service_s: f64) -> f64 {
    let mu = 1.0 / service_s;
    if exponential {
        erlang_c(servers, lambda / mu) / (f64::from(servers) * mu - lambda)
    } else {
        let rho = lambda * service_s;
        rho * service_s / (2.0 * (1.0 - rho))
    }
}

/// Erlang C: the probability that an arrival waits in M/M/c with offered load a = λ/μ.
pub fn erlang_c(c: u32, a: f64) -> f64 {
    let mut term = 1.0; // a^k / k!
    let mut sum = 0.0;
    for k in 0..c {
        if k > 0 {
            term *= a / f64::from(k);
        }
        sum += term;
    }
    let c = f64::from(c);
    let top = term * a / c * c / (c - a);
    top / (sum + top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_values() {
        // M/M/1: Wq = ρ / (μ − λ); λ 8, μ 10: 0.4 s.
        assert!((waiting_time(true, 1, 8.0, 0.1) - 0.4).abs() < 1e-12);
        // Erlang C for c = 2, a = 1: 1/3.
        assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
        // M/D/1 is half M/M/1's wait.
        assert!((waiting_time(false, 1, 8.0, 0.1) - 0.2).abs() < 1e-12);
    }
}
