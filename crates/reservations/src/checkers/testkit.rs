//! Scripted event streams for the checkers' unit tests.
