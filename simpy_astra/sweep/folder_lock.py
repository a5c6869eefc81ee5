"""The sweep's output folder, locked while a sweep uses it (``fcntl.flock`` on ``DIR/sweep.lock``).

A second sweep on the same folder would otherwise replace results.csv under the first one,
which would go on appending to the deleted file. The lock dies with the process, even under
``kill -9``; a sweep that ends (done, stopped, or failed, e.g. on a full disk) removes the file
too.
"""

from __future__ import annotations

import errno
import fcntl
import os

from simpy_astra.errors import InputError
from simpy_astra.sweep.out_writes import cannot_write, remove_quietly

LOCK_NAME = "sweep.lock"


class FolderLock:
    """An exclusive, non-blocking lock on the output folder for this process's lifetime."""

    def __init__(self, out_dir: str) -> None:
        self.path = os.path.join(out_dir, LOCK_NAME)
        self.fd = -1
        while self.fd < 0:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise cannot_write(self.path, exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise InputError(f"--out {out_dir}: another sweep (pid {holder}) is using this folder; wait "
                                 f"for it to finish or stop it, or choose another --out") from None
            if self._still_named(fd):
                self.fd = fd
            else:  # the sweep before removed the file between our open and our lock: again
                os.close(fd)
        try:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as exc:  # a full disk: the lock holds without the pid in it
            if exc.errno not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
                self.release()
                raise cannot_write(self.path, exc) from None

    def _still_named(self, fd: int) -> bool:
        """Whether ``fd`` is the file at ``self.path`` (not one a releasing sweep unlinked)."""
        try:
            st, named = os.fstat(fd), os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == (named.st_dev, named.st_ino)

    def release(self) -> None:
        """Remove the lock file, then unlock (in this order: a sweep that opened the file just
        before sees it gone once it gets the lock, and tries again)."""
        if self.fd >= 0:
            remove_quietly(self.path)
            os.close(self.fd)  # closing the last descriptor releases the flock
            self.fd = -1
