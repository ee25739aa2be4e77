//! [`invariants!`](crate::invariants): a system's invariants declared once.
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
