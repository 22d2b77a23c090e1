//! How addonctl talks to the real API servers (see `support::k8s`): the protocol and the
//! connections its client uses.

use crate::support::k8s::Env;

#[tokio::test(flavor = "multi_thread")]
async fn the_client_speaks_http2_to_the_api_server() {
    let cluster = Env::get().control_plane().admin().await;
    let mut versions = Vec::new();
    // Concurrent requests (HTTP/2 multiplexes them on one connection).
    let requests = (0..4).map(|_| {
        let client = cluster.client().clone();
        async move {
            let request = http::Request::get("/version")
                .body(kube::client::Body::empty())
                .unwrap();
            client.send(request).await.unwrap().version()
        }
    });
    versions.extend(futures::future::join_all(requests).await);
    assert_eq!(versions, [http::Version::HTTP_2; 4]);
}
