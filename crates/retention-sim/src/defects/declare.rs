//! The one macro that turns a set of flaws into a named worker type.
//!
//! Terminology:
//! - *named worker*: a public type (`StaleReleaseWorker`, ...) generic over the three ports,
//!   with the same constructor, `run` and `stop` as `retention_worker::RetentionWorker`, backed by
//!   the shared engine with exactly the flaws its module documents.
//! - *sim instantiation*: the type on the simulated ports, which the world drives through
//!   `crate::ports::WorkerUnderTest` and builds with `from_ports`.

/// Declares a named defective worker: `defective_worker! { /// docs  Name, flaws_expr }`.
macro_rules! defective_worker {
    ($(#[$attr:meta])* $name:ident, $flaws:expr) => {
        $(#[$attr])*
        pub struct $name<C: ::retention_worker::Clock, L: ::retention_worker::Leases, R: ::retention_worker::Records> {
            engine: $crate::defects::engine::Engine<C, L, R>,
        }

        impl<C, L, R> $name<C, L, R>
        where
            C: ::retention_worker::Clock + 'static,
            L: ::retention_worker::Leases + 'static,
            R: ::retention_worker::Records,
        {
            /// Builds the worker; fails with the first rule `config` breaks, exactly like
            /// `RetentionWorker::new`. No port is touched.
            pub fn new(
                owner_id: impl Into<String>,
                config: ::retention_worker::WorkerConfig,
                clock: C,
                leases: L,
                records: R,
            ) -> Result<Self, ::retention_worker::ConfigError> {
                let ports = (clock, leases, records);
                let engine = $crate::defects::engine::Engine::new(owner_id, config, ports, $flaws)?;
                Ok(Self { engine })
            }

            /// At most one leadership term, as `RetentionWorker::run` except for this
            /// worker's defect (see the module documentation).
            pub async fn run(
                &self,
            ) -> Result<::retention_worker::TermReport, ::retention_worker::RunError> {
                self.engine.run().await
            }

            /// Stops the worker, as `RetentionWorker::stop` except for this worker's defect
            /// (see the module documentation).
            pub async fn stop(&self) {
                self.engine.stop().await
            }
        }

        impl<C, L, R> ::std::fmt::Debug for $name<C, L, R>
        where
            C: ::retention_worker::Clock,
            L: ::retention_worker::Leases,
            R: ::retention_worker::Records,
        {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.engine).finish()
            }
        }

        impl $crate::ports::WorkerUnderTest
            for $name<$crate::ports::SimClock, $crate::ports::SimLeases, $crate::ports::SimRecords>
        {
    type Report = Result<::retention_worker::TermReport, ::retention_worker::RunError>;

            fn run(
                &self,
            ) -> ::futures::future::LocalBoxFuture<
                '_,
                Result<::retention_worker::TermReport, ::retention_worker::RunError>,
            > {
                Box::pin($name::run(self))
            }

            fn stop(&self) -> ::futures::future::LocalBoxFuture<'_, ()> {
                Box::pin($name::stop(self))
            }
        }

        impl $name<$crate::ports::SimClock, $crate::ports::SimLeases, $crate::ports::SimRecords> {
            /// Builds this worker for one simulated replica (a `crate::ports::WorkerFactory`).
            ///
            /// Panics if the configuration is invalid; scenario loading has already checked it.
            pub fn from_ports(
                ports: $crate::ports::WorkerPorts,
            ) -> ::std::rc::Rc<$crate::ports::AnyWorker> {
                let worker = Self::new(
                    ports.owner_id,
                    ports.config,
                    ports.clock,
                    ports.leases,
                    ports.records,
                )
                .expect("scenario loading validated the worker configuration");
                ::std::rc::Rc::new(worker)
            }
        }
    };
}

pub(crate) use defective_worker;
