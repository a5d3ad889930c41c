"""TLS for the secure port: the certificate kube-scheduler would serve, and the
server-side SSL context.

Without --tls-cert-file/--tls-private-key-file a self-signed pair is generated at
start. With --cert-dir it is written there (and reused on the next start, as
upstream reuses an existing pair); without, it lives only in a private 0700
directory for the instant the SSL context reads it, so the key never outlives the
process on disk. Served files are watched and reloaded (kpysched.serving.reload).
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from kpysched.config.tls import TLS_VERSIONS
from kpysched.serving.errors import ServingError

# Generated pairs in --cert-dir are named after the program, as upstream's PairName.
PAIR_NAME: Final = "kpysched"
CERT_VALIDITY: Final = datetime.timedelta(days=365)
# --tls-min-version values kpysched honours; Python's ssl refuses the older ones.


@dataclass(frozen=True, slots=True)
class TlsOptions:
    cert_file: Path | None = None
    key_file: Path | None = None
    cert_dir: Path | None = None
    min_version: str | None = None  # a key of TLS_VERSIONS; None = Python's default

    def __post_init__(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("--tls-cert-file and --tls-private-key-file go together "
                             "(got only one)")
        if self.min_version is not None and self.min_version not in TLS_VERSIONS:
            raise ValueError(f'--tls-min-version "{self.min_version}" is not supported; '
                             f"use one of {', '.join(TLS_VERSIONS)}")


def self_signed_pair(host: str, alternate_ips: tuple[str, ...] = (),
                     alternate_dns: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
    """A PEM certificate and key for `host` (plus the alternates), signed by itself."""
    # cryptography's x509 costs start-up ~20-30 ms of CPU to import: only here, where it
    # is used (an --insecure-serving start never is).
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                         f"{host}@{int(now.timestamp())}")])
    sans: list[x509.GeneralName] = [x509.DNSName(dns) for dns in (host, *alternate_dns)
                                    if not _is_ip(dns)]
    sans += [x509.IPAddress(ipaddress.ip_address(ip))
             for ip in (*alternate_ips, *((host,) if _is_ip(host) else ()))]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + CERT_VALIDITY)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, key_encipherment=True, key_cert_sign=True,
            content_commitment=False, data_encipherment=False, key_agreement=False,
            crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class PemPair:
    """A serving certificate (chain) and its private key, as PEM."""

    certificate: bytes
    key: bytes


def serving_pair(options: TlsOptions, bind_address: str,
                 ) -> tuple[PemPair, tuple[Path, Path] | None]:
    """The pair to serve at start, and the files it came from (None: generated in
    memory, nothing to watch). A --cert-dir pair is generated there first when missing;
    upstream then serves it from those files, reloading them as it would the flags'."""
    files: tuple[Path, Path] | None = None
    try:
        if options.cert_file is not None and options.key_file is not None:
            files = options.cert_file, options.key_file
        elif options.cert_dir is not None:
            files = _pair_in(options.cert_dir, bind_address)
        pair = PemPair(*_generate(bind_address)) if files is None else read_pair(files)
    except OSError as error:
        raise ServingError(f"{serving_flags(options)}: cannot load the serving "
                           f"certificate: {error}") from None
    return pair, files


def serving_flags(options: TlsOptions) -> str:
    """The flags that chose the serving certificate, for error messages."""
    return ("--tls-cert-file/--tls-private-key-file" if options.cert_file is not None
            else "--cert-dir")


def read_pair(files: tuple[Path, Path]) -> PemPair:
    """Raises OSError when either file cannot be read."""
    return PemPair(files[0].read_bytes(), files[1].read_bytes())


def tls_context(options: TlsOptions, pair: PemPair,
                client_ca: bytes | None) -> ssl.SSLContext:
    """A fresh context serving `pair`; ssl.SSLError when the pair does not load (not
    PEM, or the key does not match), ServingError when the client CA does not. Fresh
    rather than updated in place: a context can add trusted CAs but never drop one."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    if options.min_version is not None:
        context.minimum_version = TLS_VERSIONS[options.min_version]
    _load_pair(context, pair)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_OPTIONAL
        try:
            context.load_verify_locations(cadata=client_ca.decode())
        except (ssl.SSLError, ValueError) as error:
            raise ServingError(f"client CA (--client-ca-file or the cluster's): {error}"
                               ) from None
    return context


def _generate(bind_address: str) -> tuple[bytes, bytes]:
    # As upstream: for "localhost" and 127.0.0.1, plus the bind address when specific.
    extra_ips = (bind_address,) if bind_address not in ("", "0.0.0.0", "::") else ()
    return self_signed_pair("localhost", ("127.0.0.1", *extra_ips))


def _pair_in(directory: Path, bind_address: str) -> tuple[Path, Path]:
    cert_file, key_file = directory / f"{PAIR_NAME}.crt", directory / f"{PAIR_NAME}.key"
    if cert_file.exists() and key_file.exists():
        return cert_file, key_file
    certificate, key = _generate(bind_address)
    directory.mkdir(parents=True, exist_ok=True)
    cert_file.write_bytes(certificate)
    key_file.touch(mode=0o600)
    key_file.write_bytes(key)
    return cert_file, key_file


def _load_pair(context: ssl.SSLContext, pair: PemPair) -> None:
    # ssl only loads a chain from files: write it where nobody else can read, load,
    # delete. Loading the bytes already read (not the paths again) serves exactly what
    # was checked, even when the files change meanwhile.
    directory = Path(tempfile.mkdtemp(prefix="kpysched-tls-"))  # mode 0700
    try:
        (directory / "tls.crt").write_bytes(pair.certificate)
        (directory / "tls.key").write_bytes(pair.key)
        context.load_cert_chain(directory / "tls.crt", directory / "tls.key")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
