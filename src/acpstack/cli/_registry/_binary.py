"""Binary agents from the registry: downloaded once into the user cache, checked, unpacked.

- Only https:// archives are fetched (plain http:// only from a loopback address).
- The sha256 the registry gives is checked before anything is unpacked; a mismatch leaves
  nothing behind.
- Unpacking refuses members that would land outside the target folder: absolute paths,
  `..`, links that point out of the folder, devices. The folder appears (by rename) only
  when everything is in place, so a broken download is never mistaken for an install.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import os
import platform
import shutil
import stat
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from acpstack.cli._registry._model import BinaryTarget, RegistryError

DOWNLOAD_TIMEOUT = 60.0
MAX_ARCHIVE_BYTES = 2 * 1024**3
CHUNK = 1 << 20
MARKER = ".acpstack-installed"
Progress = Callable[[str], None]


def platform_key() -> str | None:
    """This machine as a registry platform key (e.g. linux-x86_64), or None when unknown."""
    system = {"linux": "linux", "darwin": "darwin", "windows": "windows"}.get(
        platform.system().lower()
    )
    machine = platform.machine().lower()
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(
        machine
    )
    return f"{system}-{arch}" if system and arch else None


def check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme == "https":
        return
    if parts.scheme == "http" and _loopback(parts.hostname or ""):
        return
    raise RegistryError(f"refusing to download {url}: only https:// archives are fetched")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def install(target: BinaryTarget, folder: Path, *, progress: Progress | None = None) -> Path:
    """The agent's executable, downloading and unpacking the archive into `folder` first
    unless an earlier run did."""
    if not (folder / MARKER).exists():
        _download_and_unpack(target, folder, progress)
    return locate(folder, target.cmd)


def _download_and_unpack(target: BinaryTarget, folder: Path, progress: Progress | None) -> None:
    check_url(target.archive)
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".download-") as work:
        archive = Path(work) / "archive"
        digest = download(target.archive, archive, progress)
        if target.sha256 is not None and digest != target.sha256.lower():
            raise RegistryError(
                f"sha256 mismatch for {target.archive}: the registry says {target.sha256.lower()}, "
                f"the download is {digest}; nothing was installed"
            )
        unpacked = Path(work) / "unpacked"
        unpacked.mkdir()
        unpack(archive, _archive_name(target.archive), unpacked, target.cmd)
        (unpacked / MARKER).write_text(target.archive + "\n")
        try:
            os.rename(unpacked, folder)
        except OSError:
            if not (folder / MARKER).exists():  # not a concurrent install that finished first
                raise


def download(url: str, dest: Path, progress: Progress | None = None) -> str:
    """Stream `url` into `dest`; returns the sha256 (hex) of what was written."""
    request = urllib.request.Request(url, headers={"User-Agent": "acpstack"})
    digest = hashlib.sha256()
    size = 0
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response:
            if progress is not None:
                length = response.headers.get("Content-Length")
                shown = f" ({int(length) / 1e6:.1f} MB)" if length and length.isdigit() else ""
                progress(f"downloading {url}{shown}")
            with dest.open("wb") as out:
                while chunk := response.read(CHUNK):
                    size += len(chunk)
                    if size > MAX_ARCHIVE_BYTES:
                        raise RegistryError(f"{url} is larger than {MAX_ARCHIVE_BYTES} bytes")
                    digest.update(chunk)
                    out.write(chunk)
    except urllib.error.HTTPError as exc:
        raise RegistryError(f"cannot download {url}: {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise RegistryError(f"cannot download {url}: {getattr(exc, 'reason', exc)}") from None
    return digest.hexdigest()


def _archive_name(url: str) -> str:
    return unquote(PurePosixPath(urlsplit(url).path).name).lower()


def unpack(archive: Path, name: str, dest: Path, cmd: str) -> None:
    """Unpack by the archive's name: .zip, .tar.gz/.tgz, .tar.bz2/.tbz2, .tar.xz, else a raw binary."""
    if name.endswith(".zip"):
        _unzip(archive, dest)
    elif name.endswith((".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar")):
        _untar(archive, dest)
    elif name.endswith((".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage")):
        raise RegistryError(f"{name}: installers are not supported (the registry rejects them too)")
    else:  # a raw binary: it is the command itself
        shutil.copyfile(archive, dest / _command_path(cmd).name)


def _member_path(dest: Path, name: str) -> Path:
    """Where an archive member goes; RegistryError when that is not inside `dest`."""
    parts = PurePosixPath(name.replace("\\", "/"))
    if parts.is_absolute() or ".." in parts.parts or (parts.parts and ":" in parts.parts[0]):
        raise RegistryError(f"unsafe path in the archive: {name!r}; nothing was installed")
    return dest.joinpath(*parts.parts)


def _untar(archive: Path, dest: Path) -> None:
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            root = dest.resolve()
            for member in members:
                path = _member_path(dest, member.name)
                if member.issym() or member.islnk():
                    base = path.parent if member.issym() else dest
                    target = (base / member.linkname).resolve()
                    if PurePosixPath(member.linkname).is_absolute() or not target.is_relative_to(
                        root
                    ):
                        raise RegistryError(
                            f"the archive's link {member.name!r} points outside it; nothing was installed"
                        )
                elif not (member.isfile() or member.isdir()):
                    raise RegistryError(f"the archive holds a device or fifo {member.name!r}")
            tar.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise RegistryError(f"cannot unpack the archive: {exc}") from None


def _unzip(archive: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                _member_path(dest, info.filename)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise RegistryError(f"the archive holds a symbolic link {info.filename!r}")
            zf.extractall(dest)
            for info in zf.infolist():  # zipfile drops the mode bits; executables keep theirs
                mode = (info.external_attr >> 16) & 0o777
                if mode & 0o111 and not info.is_dir():
                    os.chmod(_member_path(dest, info.filename), mode)
    except (zipfile.BadZipFile, OSError) as exc:
        raise RegistryError(f"cannot unpack the archive: {exc}") from None


def _command_path(cmd: str) -> PurePosixPath:
    return PurePosixPath(cmd.replace("\\", "/").removeprefix("./"))


def locate(folder: Path, cmd: str) -> Path:
    """The command inside the unpacked folder (as the registry names it, else found by its
    file name anywhere in the folder), made executable."""
    relative = _command_path(cmd)
    path = _member_path(folder, str(relative))
    if not path.is_file():
        found = sorted(p for p in folder.rglob(relative.name) if p.is_file())
        if not found:
            raise RegistryError(f"the archive has no {cmd!r}")
        path = found[0]
    if not path.resolve().is_relative_to(folder.resolve()):
        raise RegistryError(f"{cmd!r} points outside the unpacked archive")
    if sys.platform != "win32":
        with contextlib.suppress(OSError):
            path.chmod(path.stat().st_mode | 0o700)
    return path
