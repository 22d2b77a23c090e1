#!/usr/bin/env python3
"""A token server for Docker's registry (distribution) token authentication, on 127.0.0.1.

Answers `GET /token?service=…&scope=…` (credentials, if any, as HTTP basic auth) and the OAuth2
`POST /token` (form: grant_type=password with username/password, or grant_type=refresh_token),
with a JWT signed by KEY (ES256, the certificate in its `x5c` header; the registry trusts CERT as
its `rootcertbundle`). Anonymous callers get `pull` on repositories under `public/` only; USER
with PASSWORD (or REFRESH as refresh token) gets what they ask. Every request is logged to LOG as
one JSON line (method, path, whether credentials came, the scopes) for the tests to check.

Usage: oci-token-server.py --port P --key KEY --cert CERT --issuer I --user U --password PW
                           --refresh R --log LOG [--no-get]
`--no-get` answers GET with 405, as token servers that only speak OAuth2 do.
"""
import argparse
import base64
import json
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in ("--key", "--cert", "--issuer", "--user", "--password", "--refresh", "--log"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--no-get", action="store_true")
    args = parser.parse_args()
    with open(args.key, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    with open(args.cert, "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    x5c = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()

    def token(service: str, scopes: list, authenticated: bool) -> str:
        access = []
        for scope in scopes:
            parts = scope.split(":")
            if len(parts) < 3:
                continue
            kind, name, actions = parts[0], ":".join(parts[1:-1]), parts[-1].split(",")
            if not authenticated:
                if kind != "repository" or not name.startswith("public/"):
                    continue
                actions = [a for a in actions if a == "pull"]
            access.append({"type": kind, "name": name, "actions": actions})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "ES256", "x5c": [x5c]}
        claims = {
            "iss": args.issuer,
            "sub": args.user if authenticated else "",
            "aud": service,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": access,
        }
        signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
        der = key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_):
            pass

        def record(self, entry: dict) -> None:
            with open(args.log, "a") as f:
                f.write(json.dumps(entry) + "\n")

        def answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            header = self.headers.get("Authorization", "")
            self.record({"method": "GET", "path": url.path, "credentials": bool(header),
                         "scopes": query.get("scope", [])})
            if args.no_get or url.path != "/token":
                return self.answer(405 if args.no_get else 404, {"error": "unsupported"})
            authenticated = False
            if header.startswith("Basic "):
                user, _, password = base64.b64decode(header[6:]).decode().partition(":")
                if user != args.user or password != args.password:
                    return self.answer(401, {"error": "invalid credentials"})
                authenticated = True
            service = query.get("service", [""])[0]
            self.answer(200, {"token": token(service, query.get("scope", []), authenticated),
                              "expires_in": 300})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0") or 0)
            form = urllib.parse.parse_qs(self.rfile.read(length).decode())
            first = lambda k: form.get(k, [""])[0]
            scopes = [s for scope in form.get("scope", []) for s in scope.split(" ")]
            self.record({"method": "POST", "path": self.path, "credentials": bool(first("password") or first("refresh_token")),
                         "grant": first("grant_type"), "scopes": scopes})
            grant = first("grant_type")
            ok = (grant == "password" and first("username") == args.user and first("password") == args.password) or (
                grant == "refresh_token" and first("refresh_token") == args.refresh)
            if not ok:
                return self.answer(401, {"error": "invalid_grant"})
            self.answer(200, {"access_token": token(first("service"), scopes, True), "expires_in": 300})

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
