//! What the envelope tests share: a spec of a builtin scenario and worker, a measurement
//! without progress, and the boundary of a 1-D envelope read as values.
//!
//! Terminology:
//! - *boundary values*: for each pair of neighbouring points of different classes along a 1-D
//!   envelope's axis, `(value, class)` of the lower point and of the higher one.
#![allow(dead_code)]

use std::sync::Arc;

use leasesim::catalog::resolve_one;
use leasesim::envelope::{Axis, Class, Envelope, EnvelopeSpec, Mark, measure, render};
use leasesim::fuzz::Progress;

/// An envelope of `worker` on the builtin `scenario` over `axes` (`KEY=LO..HI`), on two jobs,
/// the rest as `EnvelopeSpec::new` has it.
pub fn spec(
    scenario: &str,
    worker: &str,
    axes: &[&str],
    resolution: usize,
    seeds: u64,
) -> EnvelopeSpec {
    let scenario = resolve_one(scenario).expect("a builtin scenario");
    let axes = axes
        .iter()
        .map(|a| Axis::parse(a).expect("an axis"))
        .collect();
    EnvelopeSpec {
        resolution,
        seeds,
        jobs: 2,
        ..EnvelopeSpec::new(scenario, worker, axes)
    }
}

pub fn run(spec: &EnvelopeSpec) -> Envelope {
    measure(spec, &Arc::new(Progress::default()), &mut |_| {}).expect("a valid envelope")
}

/// The mark of `scenario`'s system's situation `name`.
pub fn situation(scenario: &str, name: &str) -> Mark {
    let system = resolve_one(scenario).expect("a builtin scenario").system();
    Mark::situation(system, name).expect("a situation of the system")
}

/// The boundary values of a 1-D envelope (module docs), in axis order.
pub fn boundaries(envelope: &Envelope) -> Vec<((f64, Class), (f64, Class))> {
    let values = &envelope.axes[0].values;
    let at = |p: (usize, usize)| (values[p.0], envelope.map.class(p));
    envelope
        .boundary()
        .into_iter()
        .map(|(a, b)| (at(a), at(b)))
        .collect()
}

/// The boundary values of a 1-D envelope that has exactly one boundary.
pub fn one_boundary(envelope: &Envelope) -> ((f64, Class), (f64, Class)) {
    let found = boundaries(envelope);
    assert_eq!(
        found.len(),
        1,
        "one boundary: {found:?}\n{}",
        render::text(envelope)
    );
    found[0]
}

/// The classes of a 1-D envelope's points, in axis order.
pub fn classes(envelope: &Envelope) -> Vec<Class> {
    (0..envelope.map.width)
        .map(|x| envelope.map.class((x, 0)))
        .collect()
}
