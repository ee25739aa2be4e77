//! The one macro that turns a set of flaws into a named worker type.
//!
//! Terminology:
//! - *named worker*: a public type (`StaleReleaseWorker`, ...) generic over the three ports,
//!   with the same constructor, `run` and `stop` as `lease_worker::RetentionWorker`, backed by
//!   the shared engine with exactly the flaws its module documents.
//! - *sim instantiation*: the type on the simulated ports, which the world drives through
//!   `leasesim_world::WorkerUnderTest` and builds with `from_ports`.

/// Declares a named defective worker: `defective_worker! { /// docs  Name, flaws_expr }`.
macro_rules! defective_worker {
    ($(#[$attr:meta])* $name:ident, $flaws:expr) => {
        $(#[$attr])*
        pub struct $name<C: ::lease_worker::Clock, L: ::lease_worker::Leases, R: ::lease_worker::Records> {
            engine: $crate::engine::Engine<C, L, R>,
        }

        impl<C, L, R> $name<C, L, R>
        where
            C: ::lease_worker::Clock + 'static,
            L: ::lease_worker::Leases + 'static,
            R: ::lease_worker::Records,
        {
            /// Builds the worker; fails with the first rule `config` breaks, exactly like
            /// `RetentionWorker::new`. No port is touched.
            pub fn new(
                owner_id: impl Into<String>,
                config: ::lease_worker::WorkerConfig,
                clock: C,
                leases: L,
                records: R,
            ) -> Result<Self, ::lease_worker::ConfigError> {
                let ports = (clock, leases, records);
                let engine = $crate::engine::Engine::new(owner_id, config, ports, $flaws)?;
                Ok(Self { engine })
            }

            /// At most one leadership term, as `RetentionWorker::run` except for this
            /// worker's defect (see the module documentation).
            pub async fn run(
                &self,
            ) -> Result<::lease_worker::TermReport, ::lease_worker::RunError> {
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
            C: ::lease_worker::Clock,
            L: ::lease_worker::Leases,
            R: ::lease_worker::Records,
        {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.engine).finish()
            }
        }

        impl ::leasesim_world::WorkerUnderTest
            for $name<::leasesim_world::SimClock, ::leasesim_world::SimLeases, ::leasesim_world::SimRecords>
        {
            fn run(
                &self,
            ) -> ::futures::future::LocalBoxFuture<
                '_,
                Result<::lease_worker::TermReport, ::lease_worker::RunError>,
            > {
                Box::pin($name::run(self))
            }

            fn stop(&self) -> ::futures::future::LocalBoxFuture<'_, ()> {
                Box::pin($name::stop(self))
            }
        }

        impl $name<::leasesim_world::SimClock, ::leasesim_world::SimLeases, ::leasesim_world::SimRecords> {
            /// Builds this worker for one simulated replica (a `leasesim_world::WorkerFactory`).
            ///
            /// Panics if the configuration is invalid; scenario loading has already checked it.
            pub fn from_ports(
                ports: ::leasesim_world::WorkerPorts,
            ) -> ::std::rc::Rc<dyn ::leasesim_world::WorkerUnderTest> {
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
