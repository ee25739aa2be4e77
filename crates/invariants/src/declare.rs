//! [`invariants!`](crate::invariants) and [`situations!`](crate::situations): a system's
//! invariants and situations declared once.
//!
//! Terminology:
//! - *entry*: one invariant: its variant, its kebab-case name, the sentence that says when it
//!   holds, and how its checker is built from the system's check configuration.
//! - *checker type*: the type named like the variant, implementing [`Checker`](crate::Checker);
//!   it must be in scope where the macro is called.
//!
//! From the entries the macro writes the `Invariant` enum (its order is `ALL`, the order
//! checkers see an event in), `COUNT`, `name`, `holds_when`, `from_name`, its
//! [`InvariantName`](crate::InvariantName) and `Display` impls, and `AnyChecker`: one variant
//! per invariant holding its checker, built by `AnyChecker::new(invariant, config)` and
//! dispatched statically (`on_event` inlined into the set's loop, as measured worth it), and
//! a test that the names round-trip, are distinct and the sentences fit one line.

/// Declares a system's invariants and their checkers (see the module docs of `declare`).
/// `liveness: [...]` names the invariant whose violations are liveness failures (`[]`: none);
/// `config` is what every checker is built from (`()` for none).
///
/// ```ignore
/// leasesim_invariants::invariants! {
///     system: Toy, config: ToyConfig, liveness: [Settles];
///     StaleBump = "stale-bump", "the counter never applies a stale bump", |_| StaleBump::default();
///     Settles = "settles", "once faults heal, every bump lands", Settles::new;
/// }
/// ```
#[macro_export]
macro_rules! invariants {
    (
        system: $system:ty, config: $config:ty, liveness: [$($liveness:ident)?];
        $( $variant:ident = $name:literal, $holds:expr, $make:expr; )+
    ) => {
        /// One of the system's invariants (declared with `leasesim_invariants::invariants!`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Invariant {
            $( $variant, )+
        }

        impl Invariant {
            /// How many invariants there are.
            pub const COUNT: usize = [$( stringify!($variant) ),+].len();

            /// Every invariant, in the order checkers see an event in.
            pub const ALL: [Invariant; Invariant::COUNT] = [$( Invariant::$variant, )+];

            /// The kebab-case name: what reports, scenarios and the CLI use.
            pub fn name(self) -> &'static str {
                match self {
                    $( Invariant::$variant => $name, )+
                }
            }

            /// One line: what a run that keeps this invariant guarantees.
            pub fn holds_when(self) -> &'static str {
                match self {
                    $( Invariant::$variant => $holds, )+
                }
            }

            /// The invariant with this name, if any.
            pub fn from_name(name: &str) -> Option<Invariant> {
                Invariant::ALL.into_iter().find(|invariant| invariant.name() == name)
            }
        }

        impl $crate::InvariantName for Invariant {
            const ALL: &'static [Invariant] = &Invariant::ALL;

            fn name(self) -> &'static str {
                Invariant::name(self)
            }

            fn holds_when(self) -> &'static str {
                Invariant::holds_when(self)
            }

            fn is_liveness(self) -> bool {
                $( if self == Invariant::$liveness {
                    return true;
                } )?
                false
            }
        }

        /// The declared names and sentences, as reports and the CLI use them.
        #[cfg(test)]
        mod declared_invariants {
            use $crate::InvariantName;

            use super::Invariant;

            #[test]
            fn names_round_trip_are_distinct_and_fit_one_line() {
                let mut names: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
                for invariant in Invariant::ALL {
                    assert_eq!(Invariant::from_name(invariant.name()), Some(invariant));
                    assert_eq!(invariant.to_string(), invariant.name());
                    assert!(!invariant.holds_when().contains('\n'), "{invariant}");
                    assert!(!invariant.holds_when().is_empty(), "{invariant}");
                }
                names.sort_unstable();
                names.dedup();
                assert_eq!(names.len(), Invariant::COUNT);
                assert_eq!(Invariant::from_name("no-such-invariant"), None);
                let liveness = Invariant::ALL.iter().filter(|i| i.is_liveness()).count();
                let declared: &[&str] = &[$( stringify!($liveness) )?];
                assert_eq!(liveness, declared.len());
            }
        }

        impl ::std::fmt::Display for Invariant {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        /// One checker of the system, of any of its invariants.
        #[derive(Debug)]
        pub enum AnyChecker {
            $( $variant($variant), )+
        }

        impl AnyChecker {
            /// A fresh checker of `invariant`.
            pub fn new(invariant: Invariant, config: &$config) -> AnyChecker {
                let _ = config;
                match invariant {
                    $( Invariant::$variant => {
                        let make: fn(&$config) -> $variant = $make;
                        AnyChecker::$variant(make(config))
                    } )+
                }
            }
        }

        impl $crate::Checker<$system> for AnyChecker {
            fn invariant(&self) -> Invariant {
                match self {
                    $( AnyChecker::$variant(checker) => checker.invariant(), )+
                }
            }

            fn wants(
                &self,
                kind: &$crate::__private::EventKind<$system>,
            ) -> bool {
                match self {
                    $( AnyChecker::$variant(checker) => checker.wants(kind), )+
                }
            }

            #[inline(always)]
            fn on_event(
                &mut self,
                event: &$crate::__private::Stamped<$crate::__private::Event<$system>>,
                facts: &<$system as $crate::Judged>::Facts,
            ) -> Option<$crate::Violation<$system>> {
                match self {
                    $( AnyChecker::$variant(checker) => checker.on_event(event, facts), )+
                }
            }

            fn finish(
                &mut self,
                end_ms: u64,
                facts: &<$system as $crate::Judged>::Facts,
            ) -> Option<$crate::Violation<$system>> {
                match self {
                    $( AnyChecker::$variant(checker) => checker.finish(end_ms, facts), )+
                }
            }
        }
    };
}

/// Declares a system's "sometimes" situations once: each variant (with its doc comment), its
/// kebab-case name and the sentence that says what was reached. Writes the `Situation` enum
/// (its order is `ALL`, the order reports list it in), `COUNT`, `name`, `describe`,
/// `from_name`, its [`SituationName`](crate::SituationName) and `Display` impls, the
/// `SituationSet` alias, and a test that the names round-trip, are distinct and the
/// sentences fit one line.
///
/// ```ignore
/// leasesim_invariants::situations! {
///     /// The fence refused a bump.
///     BumpFenced = "bump-fenced", "the fence refused a bump carrying a token that was not live";
/// }
/// ```
#[macro_export]
macro_rules! situations {
    ( $( $(#[$meta:meta])* $variant:ident = $name:literal, $describe:expr; )+ ) => {
        /// A situation a campaign has to reach at least once (declared with
        /// `leasesim_invariants::situations!`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Situation {
            $( $(#[$meta])* $variant, )+
        }

        impl Situation {
            /// How many situations there are.
            pub const COUNT: usize = [$( stringify!($variant) ),+].len();

            /// Every situation, in the order reports list them.
            pub const ALL: [Situation; Situation::COUNT] = [$( Situation::$variant, )+];

            /// The kebab-case name: what reports and the CLI use.
            pub fn name(self) -> &'static str {
                match self {
                    $( Situation::$variant => $name, )+
                }
            }

            /// One line: what a run that reaches it did.
            pub fn describe(self) -> &'static str {
                match self {
                    $( Situation::$variant => $describe, )+
                }
            }

            /// The situation with this name, if any.
            pub fn from_name(name: &str) -> Option<Situation> {
                Situation::ALL.into_iter().find(|situation| situation.name() == name)
            }
        }

        impl $crate::SituationName for Situation {
            const ALL: &'static [Situation] = &Situation::ALL;

            fn name(self) -> &'static str {
                Situation::name(self)
            }

            fn describe(self) -> &'static str {
                Situation::describe(self)
            }

            fn index(self) -> usize {
                self as usize
            }
        }

        impl ::std::fmt::Display for Situation {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        /// A set of the system's situations.
        pub type SituationSet = $crate::SituationSet<Situation>;

        /// The declared names and sentences, as reports and the CLI use them.
        #[cfg(test)]
        mod declared_situations {
            use super::Situation;

            #[test]
            fn names_round_trip_are_distinct_and_fit_one_line() {
                let mut names: Vec<&str> = Situation::ALL.iter().map(|s| s.name()).collect();
                for situation in Situation::ALL {
                    assert_eq!(Situation::from_name(situation.name()), Some(situation));
                    assert_eq!(situation.to_string(), situation.name());
                    assert!(!situation.describe().contains('\n'), "{situation}");
                    assert!(!situation.describe().is_empty(), "{situation}");
                }
                names.sort_unstable();
                names.dedup();
                assert_eq!(names.len(), Situation::COUNT);
                assert_eq!(Situation::from_name("no-such-situation"), None);
            }
        }
    };
}
