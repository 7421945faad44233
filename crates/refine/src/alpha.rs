//! Krippendorff's alpha: how far raters agree beyond chance, with missing
//! values allowed.
//!
//! `α = 1 − D_o / D_e`: the observed disagreement within units over the
//! disagreement expected from all pairable values. Only units with at
//! least two values count; within a unit of `m` values each ordered pair
//! weighs `1 / (m − 1)`.

/// How two values differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Categories: equal or not.
    Nominal,
    /// Numbers on an interval scale: squared difference.
    Interval,
}

fn delta(level: Level, a: f64, b: f64) -> f64 {
    match level {
        Level::Nominal => {
            if (a - b).abs() < f64::EPSILON {
                0.0
            } else {
                1.0
            }
        }
        Level::Interval => (a - b) * (a - b),
    }
}

/// Alpha of `matrix` (raters × units; `None` is a missing value).
/// `None` when undefined: fewer than two pairable values, or no variation
/// at all among them and none within units (every rater gave every unit
/// the same single value: agreement is perfect but not informative, and
/// callers decide what that means).
pub fn krippendorff_alpha(matrix: &[Vec<Option<f64>>], level: Level) -> Option<f64> {
    let width = matrix.iter().map(Vec::len).max().unwrap_or(0);
    let units: Vec<Vec<f64>> = (0..width)
        .map(|u| {
            matrix
                .iter()
                .filter_map(|row| row.get(u).copied().flatten())
                .filter(|v| v.is_finite())
                .collect::<Vec<f64>>()
        })
        .filter(|values| values.len() >= 2)
        .collect();
    let n: usize = units.iter().map(Vec::len).sum();
    if n < 2 {
        return None;
    }
    let mut observed = 0.0;
    for values in &units {
        let m = values.len() as f64;
        let mut sum = 0.0;
        for (i, a) in values.iter().enumerate() {
            for (j, b) in values.iter().enumerate() {
                if i != j {
                    sum += delta(level, *a, *b);
                }
            }
        }
        observed += sum / (m - 1.0);
    }
    observed /= n as f64;
    let all: Vec<f64> = units.iter().flatten().copied().collect();
    let mut expected = 0.0;
    for (i, a) in all.iter().enumerate() {
        for (j, b) in all.iter().enumerate() {
            if i != j {
                expected += delta(level, *a, *b);
            }
        }
    }
    expected /= (n * (n - 1)) as f64;
    if expected <= f64::EPSILON {
        return if observed <= f64::EPSILON {
            None
        } else {
            Some(0.0)
        };
    }
    Some(1.0 - observed / expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Krippendorff's reliability data: 4 observers × 12 units with
    /// missing values (K. Krippendorff, "Computing Krippendorff's
    /// Alpha-Reliability", 2011): α nominal 0.743, interval 0.849.
    fn reliability_data() -> Vec<Vec<Option<f64>>> {
        let n = None;
        let s = |v: f64| Some(v);
        vec![
            vec![
                s(1.),
                s(2.),
                s(3.),
                s(3.),
                s(2.),
                s(1.),
                s(4.),
                s(1.),
                s(2.),
                n,
                n,
                n,
            ],
            vec![
                s(1.),
                s(2.),
                s(3.),
                s(3.),
                s(2.),
                s(2.),
                s(4.),
                s(1.),
                s(2.),
                s(5.),
                n,
                s(3.),
            ],
            vec![
                n,
                s(3.),
                s(3.),
                s(3.),
                s(2.),
                s(3.),
                s(4.),
                s(2.),
                s(2.),
                s(5.),
                s(1.),
                n,
            ],
            vec![
                s(1.),
                s(2.),
                s(3.),
                s(3.),
                s(2.),
                s(4.),
                s(4.),
                s(1.),
                s(2.),
                s(5.),
                s(1.),
                n,
            ],
        ]
    }

    fn round4(x: f64) -> f64 {
        (x * 10_000.0).round() / 10_000.0
    }

    #[test]
    fn the_published_example_interval_and_nominal() {
        let data = reliability_data();
        let interval = krippendorff_alpha(&data, Level::Interval).expect("defined");
        // 0.849107…: exact value 1 − D_o/D_e with D_o = 0.5, … (the
        // published figure is 0.849).
        assert_eq!(round4(interval), 0.8491, "{interval}");
        let nominal = krippendorff_alpha(&data, Level::Nominal).expect("defined");
        assert_eq!(round4(nominal), 0.7434, "{nominal}");
    }

    #[test]
    fn perfect_agreement_and_no_information() {
        let m = vec![
            vec![Some(0.2), Some(0.9), Some(0.5)],
            vec![Some(0.2), Some(0.9), Some(0.5)],
        ];
        assert_eq!(krippendorff_alpha(&m, Level::Interval), Some(1.0));
        let same = vec![vec![Some(0.8), Some(0.8)], vec![Some(0.8), Some(0.8)]];
        assert_eq!(krippendorff_alpha(&same, Level::Interval), None);
        let one = vec![vec![Some(0.8), Some(0.1)]];
        assert_eq!(krippendorff_alpha(&one, Level::Interval), None);
    }

    #[test]
    fn systematic_disagreement_is_low() {
        let m = vec![
            vec![Some(0.9), Some(0.1), Some(0.9), Some(0.1)],
            vec![Some(0.1), Some(0.9), Some(0.1), Some(0.9)],
        ];
        let a = krippendorff_alpha(&m, Level::Interval).expect("defined");
        assert!(a < 0.0, "{a}");
    }
}
