//! The TCP connector every HTTP client of addonctl is built on (kube's, octocrab's): Nagle's
//! algorithm off, so that a small request written in two segments does not wait for the peer's
//! delayed ACK (~40 ms a request on Linux).

use hyper_util::client::legacy::connect::HttpConnector;

/// A plain TCP connector with Nagle's algorithm off, for any scheme (TLS wraps it).
pub fn tcp_connector() -> HttpConnector {
    let mut connector = HttpConnector::new();
    connector.enforce_http(false);
    connector.set_nodelay(true);
    connector
}
