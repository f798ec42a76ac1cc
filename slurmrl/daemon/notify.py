"""systemd's readiness and watchdog protocol, without a dependency.

``sd_notify`` is one datagram to the socket named by ``$NOTIFY_SOCKET`` (see
sd_notify(3)); a name starting with ``@`` is an abstract socket. With
``Type=notify`` and ``WatchdogSec=`` in the unit, systemd restarts a daemon
that stops sending ``WATCHDOG=1`` (a hung ``scontrol``, a deadlock), which a
plain ``Restart=on-failure`` cannot see. Outside systemd every call is a no-op.
"""

from __future__ import annotations

import os
import socket
import time


class Notifier:
    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.address = env.get("NOTIFY_SOCKET", "")
        usec = env.get("WATCHDOG_USEC", "")
        # Ping at half the watchdog period, as sd_watchdog_enabled(3) advises.
        self.watchdog_every = int(usec) / 2e6 if usec.isdigit() and int(usec) > 0 else 0.0
        self._last_ping = 0.0

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def send(self, message: str) -> bool:
        """Send one state line (``READY=1``, ``RELOADING=1``, ...); False when not under systemd."""
        if not self.address:
            return False
        addr = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.connect(addr)
                sock.sendall(message.encode())
        except OSError:
            return False
        return True

    def watchdog(self) -> None:
        """``WATCHDOG=1`` when half the period has passed since the last one."""
        if self.watchdog_every <= 0:
            return
        now = time.monotonic()
        if now - self._last_ping >= self.watchdog_every:
            self._last_ping = now
            self.send("WATCHDOG=1")
