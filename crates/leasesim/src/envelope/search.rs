//! Where to run seeds: the grid points an envelope measures, and the classes it infers for the
//! rest.
//!
//! Terminology:
//! - *grid*: `width x height` points, `(x, y)` indices; a 1-D envelope has `height == 1`.
//! - *class*: what a point's seeds showed: [`Class::Safe`] (no seed marked), [`Class::Unsafe`]
//!   (at least one), [`Class::Refused`] (the scenario loader refuses the point's settings: no
//!   correct worker could pass them). Two neighbours of different classes have the *boundary*
//!   between them.
//! - *lattice*: the coarse points measured first: on each axis the first, middle and last
//!   index (every index on an axis of three points or fewer).
//! - *bisection*: along a lattice segment whose two ends differ, halving until two adjacent
//!   points differ: a *boundary edge*.
//! - *boundary walk*: from a boundary edge, the walk steps along the boundary one edge at a
//!   time, measuring the one or two points ahead (the two points one step along the edge's
//!   direction); it ends where the boundary leaves the grid or meets an edge walked before.
//!   The lower class of the two is the region walked, so a boundary is walked the same way
//!   from any of its edges. A lattice segment a walked boundary already crosses is not
//!   bisected. Nothing away from a boundary is measured.
//! - *inference*: an unmeasured point takes the class of the nearest measured point (by grid
//!   steps, ties to the one found first in index order). It is exact unless a region lies wholly
//!   inside a lattice cell without touching its edges ([`Search::Grid`] measures everything).
//!
//! The search is deterministic: the order points are measured in depends only on the classes
//! found, so the same classes give the same points, runs and map.

use std::collections::{BTreeSet, VecDeque};

/// What a point's seeds showed (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    Safe,
    Unsafe,
    Refused,
}

/// How an envelope chooses its points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Search {
    /// Lattice, bisection, contour following (the module docs).
    #[default]
    Adaptive,
    /// Every point of the grid.
    Grid,
}

/// A grid point: `(x, y)`.
pub type Index = (usize, usize);

/// The classes of a whole grid: measured ones and inferred ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassMap {
    pub width: usize,
    pub height: usize,
    /// Row-major (`y * width + x`): the class and whether it was measured.
    pub cells: Vec<(Class, bool)>,
    /// The points measured, in the order they were.
    pub measured: Vec<Index>,
}

impl ClassMap {
    pub fn class(&self, (x, y): Index) -> Class {
        self.cells[y * self.width + x].0
    }

    pub fn was_measured(&self, (x, y): Index) -> bool {
        self.cells[y * self.width + x].1
    }

    /// The grid neighbours of a point (left, right, down, up), inside the grid.
    pub fn neighbours(&self, (x, y): Index) -> Vec<Index> {
        neighbours(self.width, self.height, (x, y))
    }
}

fn neighbours(width: usize, height: usize, (x, y): Index) -> Vec<Index> {
    let mut found = Vec::with_capacity(4);
    if x > 0 {
        found.push((x - 1, y));
    }
    if x + 1 < width {
        found.push((x + 1, y));
    }
    if y > 0 {
        found.push((x, y - 1));
    }
    if y + 1 < height {
        found.push((x, y + 1));
    }
    found
}

/// The lattice indices of an axis of `n` points.
fn lattice(n: usize) -> Vec<usize> {
    if n <= 3 {
        (0..n).collect()
    } else {
        vec![0, (n - 1) / 2, n - 1]
    }
}

/// One search: the classes measured so far, and the function that measures a point.
struct Searcher<'a> {
    width: usize,
    height: usize,
    found: Vec<Option<Class>>,
    measured: Vec<Index>,
    measure: &'a mut dyn FnMut(Index) -> Option<Class>,
    /// The measuring function asked to stop (an interrupt): nothing more is measured.
    stopped: bool,
}

impl Searcher<'_> {
    /// The class of a point, measuring it the first time (`None` once stopped).
    fn at(&mut self, (x, y): Index) -> Option<Class> {
        let slot = y * self.width + x;
        if let Some(class) = self.found[slot] {
            return Some(class);
        }
        if self.stopped {
            return None;
        }
        let Some(class) = (self.measure)((x, y)) else {
            self.stopped = true;
            return None;
        };
        self.found[slot] = Some(class);
        self.measured.push((x, y));
        Some(class)
    }

    /// Bisects the segment from `a` to `b` (same row or column, `a` before `b`), whose ends
    /// differ, down to one boundary edge; returns it.
    fn bisect(&mut self, mut a: Index, mut b: Index) -> Option<(Index, Index)> {
        let class_a = self.at(a)?;
        while b.0 - a.0 + b.1 - a.1 > 1 {
            let middle = ((a.0 + b.0) / 2, (a.1 + b.1) / 2);
            if self.at(middle)? == class_a {
                a = middle;
            } else {
                b = middle;
            }
        }
        // invariant: the edge found is a boundary edge.
        debug_assert!(self.found_class(a) != self.found_class(b));
        Some((a, b))
    }

    fn found_class(&self, (x, y): Index) -> Option<Class> {
        self.found[y * self.width + x]
    }

    /// The lattice's segments (pairs of neighbouring lattice points), rows then columns, with
    /// every lattice point measured.
    fn lattice_segments(&mut self) -> Option<Vec<(Index, Index)>> {
        let (xs, ys) = (lattice(self.width), lattice(self.height));
        for &y in &ys {
            for &x in &xs {
                self.at((x, y))?;
            }
        }
        let mut segments = Vec::new();
        for &y in &ys {
            segments.extend(xs.windows(2).map(|w| ((w[0], y), (w[1], y))));
        }
        for &x in &xs {
            segments.extend(ys.windows(2).map(|w| ((x, w[0]), (x, w[1]))));
        }
        Some(segments)
    }

    fn inside(&self, (x, y): (i64, i64)) -> Option<Index> {
        let fits = x >= 0 && y >= 0 && (x as usize) < self.width && (y as usize) < self.height;
        fits.then_some((x as usize, y as usize))
    }

    /// Walks the boundary from edge `(a, b)` one way (`turn` is +1 or -1), measuring the one
    /// or two points ahead of each edge, until the walk leaves the grid or meets an edge it
    /// walked (see the module docs).
    fn walk(
        &mut self,
        start: (Index, Index),
        turn: i64,
        walked: &mut BTreeSet<(Index, Index)>,
    ) -> Option<()> {
        let region = self.at(start.0)?;
        let (mut a, mut b) = start;
        let mut bent_inward = false;
        for _ in 0..4 * self.width * self.height {
            let (ax, ay) = (a.0 as i64, a.1 as i64);
            let (dx, dy) = (b.0 as i64 - ax, b.1 as i64 - ay);
            let (tx, ty) = (-dy * turn, dx * turn);
            let (Some(ahead_a), Some(ahead_b)) = (
                self.inside((ax + tx, ay + ty)),
                self.inside((b.0 as i64 + tx, b.1 as i64 + ty)),
            ) else {
                return Some(());
            };
            // A boundary that turned one way is most often about to turn the other (a
            // staircase): the point that tells is looked at first, and the other is left
            // unmeasured when the turn is found (a saddle there is taken for a turn).
            let next = if bent_inward {
                if self.at(ahead_b)? == region {
                    (ahead_b, b)
                } else if self.at(ahead_a)? == region {
                    (ahead_a, ahead_b)
                } else {
                    (a, ahead_a)
                }
            } else if self.at(ahead_a)? != region {
                (a, ahead_a)
            } else if self.at(ahead_b)? != region {
                (ahead_a, ahead_b)
            } else {
                (ahead_b, b)
            };
            bent_inward = next == (a, ahead_a);
            // invariant: every edge walked separates the region from another class.
            debug_assert!(
                self.found_class(next.0) == Some(region)
                    && self.found_class(next.1) != Some(region)
            );
            if !walked.insert(unordered(next)) {
                return Some(());
            }
            (a, b) = next;
        }
        Some(())
    }

    /// The first and last points of the segment from `a` to `b` (a row or a column, `a`
    /// first) that the loader accepts, if they differ.
    fn accepted_part(&self, a: Index, b: Index) -> Option<(Index, Index)> {
        let along: Vec<Index> = if a.1 == b.1 {
            (a.0..=b.0).map(|x| (x, a.1)).collect()
        } else {
            (a.1..=b.1).map(|y| (a.0, y)).collect()
        };
        let mut accepted = along
            .into_iter()
            .filter(|&p| self.found_class(p) != Some(Class::Refused));
        let first = accepted.next()?;
        let last = accepted.next_back()?;
        Some((first, last))
    }

    /// The adaptive search (the module docs): each lattice segment whose ends differ and that
    /// no boundary walked so far crosses is bisected, and the boundary found is walked both
    /// ways.
    fn adaptive(&mut self) -> Option<()> {
        let mut walked = BTreeSet::new();
        for (a, b) in self.lattice_segments()? {
            // Where the segment enters refused settings is known without a run; the part the
            // loader accepts is bisected when its ends differ.
            let mut edges = self.refusal_edges(a, b);
            if let Some((a, b)) = self.accepted_part(a, b)
                && self.at(a)? != self.at(b)?
                && !crosses(&walked, a, b)
            {
                edges.push(self.bisect(a, b)?);
            }
            for (a, b) in edges {
                if !walked.insert(unordered((a, b))) {
                    continue;
                }
                // The lower class is the region walked, so a boundary is walked the same way
                // from whichever of its edges it is found.
                let edge = if self.at(a)? < self.at(b)? {
                    (a, b)
                } else {
                    (b, a)
                };
                self.walk(edge, 1, &mut walked)?;
                self.walk(edge, -1, &mut walked)?;
            }
        }
        Some(())
    }

    /// The pairs of neighbours along the segment from `a` to `b` of which one is refused.
    fn refusal_edges(&self, a: Index, b: Index) -> Vec<(Index, Index)> {
        let along: Vec<Index> = if a.1 == b.1 {
            (a.0..=b.0).map(|x| (x, a.1)).collect()
        } else {
            (a.1..=b.1).map(|y| (a.0, y)).collect()
        };
        let refused = |p: Index| self.found_class(p) == Some(Class::Refused);
        along
            .windows(2)
            .filter(|w| refused(w[0]) != refused(w[1]))
            .map(|w| (w[0], w[1]))
            .collect()
    }
}

/// Whether a walked edge lies on the segment from `a` to `b` (a row or a column, `a` first).
fn crosses(walked: &BTreeSet<(Index, Index)>, a: Index, b: Index) -> bool {
    if a.1 == b.1 {
        (a.0..b.0).any(|x| walked.contains(&((x, a.1), (x + 1, a.1))))
    } else {
        (a.1..b.1).any(|y| walked.contains(&((a.0, y), (a.0, y + 1))))
    }
}

fn unordered((a, b): (Index, Index)) -> (Index, Index) {
    if a < b { (a, b) } else { (b, a) }
}

/// Searches a `width x height` grid with `measure` (which returns `None` to stop: the map then
/// holds what was measured) and returns the class of every point. `refused` (row-major) are
/// the points the loader refuses, known before the search: never measured, never inferred.
pub fn search(
    width: usize,
    height: usize,
    how: Search,
    refused: &[bool],
    measure: &mut dyn FnMut(Index) -> Option<Class>,
) -> ClassMap {
    assert!(width >= 1 && height >= 1, "a grid has a point");
    assert_eq!(refused.len(), width * height, "one refusal per point");
    let mut searcher = Searcher {
        width,
        height,
        found: refused
            .iter()
            .map(|&r| r.then_some(Class::Refused))
            .collect(),
        measured: Vec::new(),
        measure,
        stopped: false,
    };
    match how {
        Search::Grid => {
            for y in 0..height {
                for x in 0..width {
                    if searcher.at((x, y)).is_none() {
                        break;
                    }
                }
            }
        }
        Search::Adaptive => {
            let _ = searcher.adaptive();
        }
    }
    infer(width, height, &searcher.found, searcher.measured)
}

/// Gives every unmeasured point the class of its nearest measured one that is not refused (a
/// breadth-first flood from those points in index order; it crosses refused points without
/// giving them its class, so a point walled in by refusals still takes the nearest class run).
fn infer(width: usize, height: usize, found: &[Option<Class>], measured: Vec<Index>) -> ClassMap {
    let mut cells: Vec<Option<(Class, bool)>> =
        found.iter().map(|c| c.map(|c| (c, true))).collect();
    let mut reached: Vec<bool> = found
        .iter()
        .map(|c| c.is_some_and(|c| c != Class::Refused))
        .collect();
    let mut queue: VecDeque<(Index, Class)> = (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .filter_map(|(x, y)| match found[y * width + x] {
            Some(class) if class != Class::Refused => Some(((x, y), class)),
            _ => None,
        })
        .collect();
    while let Some((point, class)) = queue.pop_front() {
        for (x, y) in neighbours(width, height, point) {
            let slot = y * width + x;
            if reached[slot] {
                continue;
            }
            reached[slot] = true;
            if cells[slot].is_none() {
                cells[slot] = Some((class, false));
            }
            queue.push_back(((x, y), class));
        }
    }
    // invariant: a point is refused exactly when the loader refused it.
    debug_assert!(
        cells
            .iter()
            .zip(found)
            .all(|(c, f)| (c.map(|(c, _)| c) == Some(Class::Refused))
                == (*f == Some(Class::Refused)))
    );
    // A search stopped before its first run leaves nothing to infer from.
    let cells = cells
        .into_iter()
        .map(|c| c.unwrap_or((Class::Safe, false)))
        .collect();
    ClassMap {
        width,
        height,
        cells,
        measured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Searches a grid whose true classes are `truth(x, y)`; returns the map and how many points
    /// it measured.
    fn run(
        width: usize,
        height: usize,
        how: Search,
        truth: impl Fn(usize, usize) -> Class,
    ) -> ClassMap {
        let refused: Vec<bool> = (0..height)
            .flat_map(|y| (0..width).map(move |x| (x, y)))
            .map(|(x, y)| truth(x, y) == Class::Refused)
            .collect();
        search(width, height, how, &refused, &mut |(x, y)| {
            let class = truth(x, y);
            assert_ne!(class, Class::Refused, "a refused point is never measured");
            Some(class)
        })
    }

    fn wrong_points(map: &ClassMap, truth: impl Fn(usize, usize) -> Class) -> usize {
        (0..map.height)
            .flat_map(|y| (0..map.width).map(move |x| (x, y)))
            .filter(|&(x, y)| map.class((x, y)) != truth(x, y))
            .count()
    }

    fn diagonal(x: usize, y: usize) -> Class {
        if x + y < 9 {
            Class::Unsafe
        } else {
            Class::Safe
        }
    }

    fn threshold(x: usize, _: usize) -> Class {
        if x < 6 { Class::Unsafe } else { Class::Safe }
    }

    fn quarter_disc(x: usize, y: usize) -> Class {
        if x * x + y * y < 40 {
            Class::Unsafe
        } else {
            Class::Safe
        }
    }

    /// The quarter disc, and a refused corner at the far side.
    fn refused_corner(x: usize, y: usize) -> Class {
        if x == 9 && y > 6 {
            Class::Refused
        } else {
            quarter_disc(x, y)
        }
    }

    #[test]
    fn an_adaptive_search_maps_a_10_by_10_grid_exactly_with_a_third_of_the_points() {
        for (name, truth, most) in [
            ("diagonal", diagonal as fn(usize, usize) -> Class, 33),
            ("threshold", threshold, 33),
            ("quarter disc", quarter_disc, 33),
            // Two boundaries: the disc's and the refused corner's.
            ("refused corner", refused_corner, 40),
        ] {
            let map = run(10, 10, Search::Adaptive, truth);
            assert_eq!(wrong_points(&map, truth), 0, "{name}: {map:?}");
            assert!(
                map.measured.len() <= most,
                "{name}: {} points measured of 100",
                map.measured.len()
            );
        }
    }

    #[test]
    fn an_unsafe_region_beside_refused_settings_is_found_and_refusals_stay_exact() {
        // A refused column (a renewal interval not below the lease) beside an unsafe region
        // between two lattice rows: only the refusal boundary leads to it.
        for (width, height) in [(10, 10), (6, 6)] {
            let truth = move |x: usize, y: usize| {
                if x == width - 1 {
                    Class::Refused
                } else if x == width - 2 && (height / 2 + 1..=height - 2).contains(&y) {
                    Class::Unsafe
                } else {
                    Class::Safe
                }
            };
            let map = run(width, height, Search::Adaptive, truth);
            assert_eq!(wrong_points(&map, truth), 0, "{width}: {map:?}");
        }
    }

    #[test]
    fn a_point_walled_in_by_refusals_takes_the_nearest_class_run_not_refused() {
        // A ring of refused points around (2, 2), which no lattice segment reaches.
        let ring = |x: usize, y: usize| {
            let on_ring = (1..=3).contains(&x) && (1..=3).contains(&y) && (x, y) != (2, 2);
            if on_ring { Class::Refused } else { Class::Safe }
        };
        let map = run(10, 10, Search::Adaptive, ring);
        assert_eq!(map.class((2, 2)), Class::Safe);
        assert!(!map.was_measured((2, 2)));
        assert_eq!(wrong_points(&map, ring), 0);
    }

    #[test]
    fn a_grid_search_measures_every_point_once() {
        let map = run(4, 3, Search::Grid, diagonal);
        assert_eq!(map.measured.len(), 12);
        let unique: BTreeSet<_> = map.measured.iter().collect();
        assert_eq!(unique.len(), 12);
        assert!(map.cells.iter().all(|&(_, measured)| measured));
    }

    #[test]
    fn a_one_axis_search_bisects_to_the_boundary() {
        let truth = |x: usize, _: usize| if x < 13 { Class::Unsafe } else { Class::Safe };
        let map = run(20, 1, Search::Adaptive, truth);
        assert_eq!(wrong_points(&map, truth), 0);
        assert!(map.was_measured((12, 0)) && map.was_measured((13, 0)));
        // The lattice (3 points) and the bisection of 9 points between two of them.
        assert!(map.measured.len() <= 3 + 4, "{:?}", map.measured);
    }

    #[test]
    fn a_region_inside_one_lattice_cell_is_missed_by_the_adaptive_search_only() {
        let island = |x: usize, y: usize| {
            if (x, y) == (2, 2) {
                Class::Unsafe
            } else {
                Class::Safe
            }
        };
        assert_eq!(
            wrong_points(&run(10, 10, Search::Adaptive, island), island),
            1
        );
        assert_eq!(wrong_points(&run(10, 10, Search::Grid, island), island), 0);
    }

    #[test]
    fn a_stopped_search_keeps_what_it_measured() {
        let mut left = 5;
        let map = search(10, 10, Search::Adaptive, &[false; 100], &mut |(x, y)| {
            left -= 1;
            (left >= 0).then(|| diagonal(x, y))
        });
        assert_eq!(map.measured.len(), 5);
    }
}
