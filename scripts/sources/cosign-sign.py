#!/usr/bin/env python3
"""Signs an OCI manifest as cosign does with a key, for the tests (no cosign binary needed).

Writes cosign's "simple signing" payload naming DIGEST, signs it with an ECDSA P-256 key (SHA-256,
ASN.1 DER, base64 in the layer annotation `dev.cosignproject.cosign/signature`) and pushes it to
the anonymous registry REGISTRY (plain HTTP, 127.0.0.1) as tag `sha256-<hex>.sig` of REPOSITORY,
the layout cosign gives a key-based signature.

Usage: cosign-sign.py keygen PRIVATE PUBLIC
       cosign-sign.py sign --registry HOST:PORT --repository REPO --digest sha256:HEX --key PRIVATE
                           [--names sha256:OTHER] [--tamper]
`--names` puts another digest in the payload (a signature for something else); `--tamper` changes
the payload after signing it (the signature no longer matches).
"""
import argparse
import base64
import hashlib
import json
import sys
import urllib.request

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec


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
    parser.add_argument("command", choices=["sign"])
    parser.add_argument("--registry", required=True)
    parser.add_argument("--repository", required=True)
    parser.add_argument("--digest", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--names")
    parser.add_argument("--tamper", action="store_true")
    args = parser.parse_args()
    with open(args.key, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
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


if __name__ == "__main__":
    main()
