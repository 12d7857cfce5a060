"""A throwaway OpenLDAP server (Debian's ``slapd``) for the directory tests: a configuration and a
small tree in a temporary directory, plain LDAP and LDAPS on free ports (a certificate from a CA
made here), stopped on leaving. ``.ci/run`` installs ``slapd`` and ``ldap-utils``; without them
the tests that need it skip, saying so.

The tree (``dc=example,dc=org``): people ada (ml-team, gpu-admins), bea (ml-team, vision) and
cyd (ml-team, vision, gpu-admins; disabled: locked with ``pwdAccountLockedTime``, which the user
filter leaves out, as Active Directory's filter leaves out a disabled ``userAccountControl``);
the service account ``cn=poolweb,ou=services`` that searches.
"""

from __future__ import annotations

import datetime as dt
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from poolweb.ports import free_port, port_open

SLAPD = Path("/usr/sbin/slapd")
SLAPADD = Path("/usr/sbin/slapadd")
BASE = "dc=example,dc=org"
ROOT_DN, ROOT_PASSWORD = f"cn=admin,{BASE}", "root-secret"
SERVICE_DN, SERVICE_PASSWORD = f"cn=poolweb,ou=services,{BASE}", "service-secret"
# Disabled accounts carry a lock; the user filter leaves them out (docs/sign-in.md, OpenLDAP).
USER_FILTER = "(&(uid=%(user)s)(!(pwdAccountLockedTime=*)))"
PEOPLE = {"ada": ["ml-team", "gpu-admins"], "bea": ["ml-team", "vision"], "cyd": ["ml-team", "vision", "gpu-admins"]}
LOCKED = {"cyd"}


def available() -> str | None:
    """Why the server cannot run here, or None."""
    if not SLAPD.exists() or not SLAPADD.exists():
        return "slapd is not installed (apt-get install slapd ldap-utils; .ci/run does)"
    try:
        import ldap  # noqa: F401
    except ImportError:
        return "python-ldap is not installed (pip install -e '.[ldap]'; .ci/run does)"
    return None


def password(user: str) -> str:
    return f"{user}-password"


def tree() -> str:
    entries = [
        f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example",
        f"dn: ou=people,{BASE}\nobjectClass: organizationalUnit\nou: people",
        f"dn: ou=groups,{BASE}\nobjectClass: organizationalUnit\nou: groups",
        f"dn: ou=services,{BASE}\nobjectClass: organizationalUnit\nou: services",
        f"dn: {SERVICE_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: poolweb\n"
        f"userPassword: {SERVICE_PASSWORD}",
    ]
    for user in PEOPLE:
        entry = (f"dn: uid={user},ou=people,{BASE}\nobjectClass: inetOrgPerson\nuid: {user}\ncn: {user.title()} Example\n"
                 f"givenName: {user.title()}\nsn: Example\nmail: {user}@example.org\nuserPassword: {password(user)}")
        if user in LOCKED:
            entry += "\npwdAccountLockedTime: 000001010000Z"
        entries.append(entry)
    groups = sorted({g for gs in PEOPLE.values() for g in gs})
    for group in groups:
        members = "\n".join(f"member: uid={u},ou=people,{BASE}" for u, gs in PEOPLE.items() if group in gs)
        entries.append(f"dn: cn={group},ou=groups,{BASE}\nobjectClass: groupOfNames\ncn: {group}\n{members}")
    return "\n\n".join(entries) + "\n"


def configuration(directory: Path) -> str:
    schema = "\n".join(f"include /etc/ldap/schema/{name}.schema" for name in ("core", "cosine", "inetorgperson", "nis"))
    return f"""{schema}
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload ppolicy
pidfile {directory}/slapd.pid
TLSCACertificateFile {directory}/ca.pem
TLSCertificateFile {directory}/server.pem
TLSCertificateKeyFile {directory}/server.key

database mdb
suffix "{BASE}"
rootdn "{ROOT_DN}"
rootpw {ROOT_PASSWORD}
directory {directory}/data
overlay ppolicy
access to attrs=userPassword by self write by anonymous auth by * none
access to * by * read
"""


def write_certificates(directory: Path) -> None:
    """A CA and a certificate for 127.0.0.1 and localhost signed by it."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Poolweb test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    server = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
              .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
              .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                          x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
              .sign(ca_key, hashes.SHA256()))
    (directory / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (directory / "server.pem").write_bytes(server.public_bytes(serialization.Encoding.PEM))
    (directory / "server.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                             serialization.NoEncryption()))


@dataclass
class Slapd:
    directory: Path
    port: int
    tls_port: int
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def tls_url(self) -> str:
        return f"ldaps://127.0.0.1:{self.tls_port}"

    @property
    def ca_file(self) -> str:
        return str(self.directory / "ca.pem")

    def environment(self, **overrides: str) -> dict[str, str]:
        """The POOLWEB_LDAP_… settings that point Poolweb at this server."""
        return {"POOLWEB_LDAP_URL": self.url, "POOLWEB_LDAP_BIND_DN": SERVICE_DN,
                "POOLWEB_LDAP_BIND_PASSWORD": SERVICE_PASSWORD, "POOLWEB_LDAP_USER_BASE": f"ou=people,{BASE}",
                "POOLWEB_LDAP_USER_FILTER": USER_FILTER, "POOLWEB_LDAP_GROUP_BASE": f"ou=groups,{BASE}",
                "POOLWEB_LDAP_TIMEOUT_SECONDS": "2", **overrides}

    def start(self) -> None:
        log = open(self.directory / "slapd.log", "ab")
        self.process = subprocess.Popen(
            [str(SLAPD), "-d", "0", "-f", str(self.directory / "slapd.conf"),
             "-h", f"ldap://127.0.0.1:{self.port}/ ldaps://127.0.0.1:{self.tls_port}/"],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while not (port_open("127.0.0.1", self.port) and port_open("127.0.0.1", self.tls_port)):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"slapd did not start: {(self.directory / 'slapd.log').read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # slapd's clean shutdown
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def modify(self, dn: str, changes: list[tuple[int, str, list[bytes] | None]]) -> None:
        """``ldap.modify_s`` as the directory's administrator (a test changing the directory)."""
        import ldap

        connection = ldap.initialize(self.url)
        connection.simple_bind_s(ROOT_DN, ROOT_PASSWORD)
        try:
            connection.modify_s(dn, changes)
        finally:
            connection.unbind_s()


@contextmanager
def running_slapd(directory: Path) -> Iterator[Slapd]:
    (directory / "data").mkdir(parents=True)
    write_certificates(directory)
    (directory / "slapd.conf").write_text(configuration(directory))
    (directory / "tree.ldif").write_text(tree())
    subprocess.run([str(SLAPADD), "-f", str(directory / "slapd.conf"), "-l", str(directory / "tree.ldif")],
                   check=True, capture_output=True)
    server = Slapd(directory, free_port(), free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory / "data", ignore_errors=True)
