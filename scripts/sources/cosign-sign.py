#!/usr/bin/env python3
"""Signs an OCI manifest as cosign does with a key, for the tests (no cosign binary needed).

Writes cosign's "simple signing" payload naming DIGEST, signs it with an ECDSA P-256 key (SHA-256,
ASN.1 DER, base64 in the layer annotation `dev.cosignproject.cosign/signature`) and pushes it to
the anonymous registry REGISTRY (plain HTTP, 127.0.0.1) as tag `sha256-<hex>.sig` of REPOSITORY,
the layout cosign gives a key-based signature.

`bundle` makes cosign v3's form instead: a Sigstore bundle v0.3 (a DSSE envelope over an in-toto
statement of predicate type https://sigstore.dev/cosign/sign/v1 whose subject is DIGEST, or with
`--message` a messageSignature over the digest) pushed as an OCI 1.1 referrer of DIGEST: the bundle
layer, the empty config, a manifest whose `subject` is the signed manifest, and, since the registry
may have no referrers API, the referrers index at the fallback tag `sha256-<hex>` (added to).
With `--write DIR` nothing is pushed: the blobs and manifests are written to DIR (for a protocol
fake), `--subject-size` giving the signed manifest's size.

Usage: cosign-sign.py keygen PRIVATE PUBLIC
       cosign-sign.py sign|bundle --registry HOST:PORT --repository REPO --digest sha256:HEX
                           --key PRIVATE [--names sha256:OTHER] [--tamper]
                           [--message] [--predicate TYPE] [--write DIR --subject-size N]
`--names` puts another digest in the payload (a signature for something else); `--tamper` changes
the payload after signing it (the signature no longer matches); `--predicate` another predicate
type (an attestation, not a signature).
"""
import argparse
import base64
import hashlib
import json
import os
import sys
import urllib.error
import urllib.request

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils

BUNDLE = "application/vnd.dev.sigstore.bundle.v0.3+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY = "application/vnd.oci.empty.v1+json"
SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"
IN_TOTO = "application/vnd.in-toto+json"


def request(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=30) as response:
        return response.status, dict(response.headers), response.read()


def push_blob(base, repository, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    _, headers, _ = request("POST", f"{base}/v2/{repository}/blobs/uploads/")
    location = headers["Location"]
    if location.startswith("/"):
        location = base + location
    separator = "&" if "?" in location else "?"
    request("PUT", f"{location}{separator}digest={digest}", data,
            {"Content-Type": "application/octet-stream"})
    return {"digest": digest, "size": len(data)}


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "keygen":
        key = ec.generate_private_key(ec.SECP256R1())
        with open(sys.argv[2], "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        with open(sys.argv[3], "wb") as f:
            f.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["sign", "bundle"])
    parser.add_argument("--registry", required=True)
    parser.add_argument("--repository", required=True)
    parser.add_argument("--digest", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--names")
    parser.add_argument("--tamper", action="store_true")
    parser.add_argument("--message", action="store_true")
    parser.add_argument("--predicate", default=SIGN_PREDICATE)
    parser.add_argument("--write")
    parser.add_argument("--subject-size", type=int)
    args = parser.parse_args()
    with open(args.key, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    if args.command == "bundle":
        bundle(args, key)
        return
    payload = json.dumps({
        "critical": {
            "identity": {"docker-reference": f"{args.registry}/{args.repository}"},
            "image": {"docker-manifest-digest": args.names or args.digest},
            "type": "cosign container image signature",
        },
        "optional": None,
    }, separators=(",", ":")).encode()
    signature = base64.b64encode(key.sign(payload, ec.ECDSA(hashes.SHA256()))).decode()
    if args.tamper:
        payload = payload.replace(b"cosign container image signature", b"cosign container image signaturE")
    base = f"http://{args.registry}"
    layer = push_blob(base, args.repository, payload)
    config_bytes = json.dumps({"architecture": "", "os": "", "config": {},
                               "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}).encode()
    config = push_blob(base, args.repository, config_bytes)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
        "layers": [{
            "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            **layer,
            "annotations": {"dev.cosignproject.cosign/signature": signature},
        }],
    }
    tag = args.digest.replace(":", "-") + ".sig"
    request("PUT", f"{base}/v2/{args.repository}/manifests/{tag}", json.dumps(manifest).encode(),
            {"Content-Type": "application/vnd.oci.image.manifest.v1+json"})
    print(tag)


def b64(data):
    return base64.b64encode(data).decode()


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def make_bundle(args, key):
    """The bundle's bytes, as cosign v3 writes them (protobuf-specs JSON)."""
    named = (args.names or args.digest).split(":", 1)[1]
    public = key.public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    material = {"publicKey": {"hint": b64(hashlib.sha256(public).digest())}}
    if args.message:
        digest = bytes.fromhex(named)
        signature = key.sign(digest, ec.ECDSA(utils.Prehashed(hashes.SHA256())))
        if args.tamper:
            digest = bytes(b ^ 1 for b in digest)
        return {"mediaType": BUNDLE, "verificationMaterial": material,
                "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": b64(digest)},
                                     "signature": b64(signature)}}
    statement = json.dumps({"_type": "https://in-toto.io/Statement/v1",
                            "subject": [{"digest": {"sha256": named}}],
                            "predicateType": args.predicate, "predicate": {}},
                           separators=(",", ":")).encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(IN_TOTO), IN_TOTO.encode(), len(statement), statement)
    signature = key.sign(pae, ec.ECDSA(hashes.SHA256()))
    if args.tamper:
        statement = statement.replace(b"predicate\":{}", b"predicate\":{\"x\":1}")
    return {"mediaType": BUNDLE, "verificationMaterial": material,
            "dsseEnvelope": {"payload": b64(statement), "payloadType": IN_TOTO,
                             "signatures": [{"sig": b64(signature), "keyid": ""}]}}


def bundle(args, key):
    bundle_bytes = json.dumps(make_bundle(args, key)).encode()
    config_bytes = b"{}"
    base = f"http://{args.registry}"
    if args.write:
        subject_size = args.subject_size
    else:
        _, _, body = request("GET", f"{base}/v2/{args.repository}/manifests/{args.digest}",
                             headers={"Accept": OCI_MANIFEST})
        subject_size = len(body)
    annotations = {"dev.sigstore.bundle.content": "message-signature" if args.message else "dsse-envelope",
                   "dev.sigstore.bundle.predicateType": args.predicate,
                   "org.opencontainers.image.created": "2026-11-29T00:00:00Z"}
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": BUNDLE,
        "config": {"mediaType": EMPTY, "artifactType": BUNDLE, "digest": sha256(config_bytes),
                   "size": len(config_bytes)},
        "layers": [{"mediaType": BUNDLE, "digest": sha256(bundle_bytes), "size": len(bundle_bytes)}],
        "annotations": annotations,
        "subject": {"mediaType": OCI_MANIFEST, "digest": args.digest, "size": subject_size},
    }).encode()
    entry = {"mediaType": OCI_MANIFEST, "digest": sha256(manifest), "size": len(manifest),
             "artifactType": BUNDLE, "annotations": annotations}
    tag = args.digest.replace(":", "-")
    if args.write:
        os.makedirs(args.write, exist_ok=True)
        for data in (bundle_bytes, config_bytes, manifest):
            with open(os.path.join(args.write, sha256(data).replace(":", "-")), "wb") as f:
                f.write(data)
        with open(os.path.join(args.write, "referrers.json"), "w") as f:
            json.dump({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [entry]}, f)
        print(sha256(manifest))
        return
    push_blob(base, args.repository, bundle_bytes)
    push_blob(base, args.repository, config_bytes)
    request("PUT", f"{base}/v2/{args.repository}/manifests/{sha256(manifest)}", manifest,
            {"Content-Type": OCI_MANIFEST})
    try:
        _, _, body = request("GET", f"{base}/v2/{args.repository}/manifests/{tag}",
                             headers={"Accept": OCI_INDEX})
        index = json.loads(body)
    except urllib.error.HTTPError as e:
        if e.code != 404:
            raise
        index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
    index["manifests"].append(entry)
    request("PUT", f"{base}/v2/{args.repository}/manifests/{tag}", json.dumps(index).encode(),
            {"Content-Type": OCI_INDEX})
    print(sha256(manifest))


if __name__ == "__main__":
    main()
