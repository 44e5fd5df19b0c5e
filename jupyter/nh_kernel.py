#!/usr/bin/python3
"""nh_kernel.py -- the Jupyter kernel of nh (LANGUAGE.md 1.1).

A wrapper kernel: Debian's python3-ipykernel speaks Jupyter's messaging
protocol, and this file only translates between it and nh's machine
interface, ``nh --protocol`` (doc/protocol.md), which runs every statement.
One kernel is one nh session: a cell is sent as one ``execute`` request,
and what nh answers becomes Jupyter messages --

  text     a ``stream`` on stdout        stderr  a ``stream`` on stderr
  latex    ``display_data`` with text/latex (``$\\displaystyle ...$``)
  svg      ``display_data`` with image/svg+xml, image/png and
           application/pdf (nh's other renderings) and text/html (an
           <img> of the SVG)
  html     ``display_data`` with text/html (``animate``: a self-contained
           <div> with its SVG and script)
  error    an ``error`` (the traceback is nh's message, line and caret)

``complete_request`` and ``is_complete_request`` are nh's ``complete`` and
``is_complete``.  An interrupt (SIGINT to this process, Jupyter's
interrupt_mode "signal") is passed on to nh as one SIGINT, which stops a
long ``simulate`` as Ctrl-C does in the REPL.  nh runs in a session of its
own, so that the signal Jupyter sends to this kernel's process group does
not reach it twice.  If nh ends (``quit``, a second interrupt while a
statement does not look, a crash), the cell says so and the next cell
starts a fresh session; a restart of the kernel starts a fresh one too.

Must not: interpret nh's language (nh does); write to nh anything but
whole request lines.
"""

import argparse
import base64
import json
import os
import signal
import subprocess

# ipykernel imports its debugger, which warns on every start about
# Python's frozen modules; this kernel has nothing for it to debug.
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")

from ipykernel.kernelbase import Kernel  # noqa: E402


class NhEnded(Exception):
    """nh's process ended while a request was being served."""


class NhKernel(Kernel):
    implementation = "nh"
    implementation_version = "unknown"
    language = "nh"
    language_version = "unknown"
    language_info = {
        "name": "nh",
        "mimetype": "text/x-nh",
        "file_extension": ".nh",
    }
    banner = "nh: nonholonomic mechanics"

    nh_path = "nh"  # set by main from --nh

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._nh = None
        self._next_id = 0
        self._start()

    # ---- the nh process ---------------------------------------------------

    def _start(self):
        self._nh = subprocess.Popen(
            [self.nh_path, "--protocol"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        info = self._request({"request": "info"})
        version = info.get("version", "unknown")
        self.implementation_version = version
        self.language_version = version
        self.language_info = dict(self.language_info, version=version)
        self.banner = info.get("banner", self.banner)

    def _ended(self):
        """Why nh ended, for the user; the process is reaped."""
        code = self._nh.wait()
        self._nh = None
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = "signal %d" % -code
            return "nh ended (%s)" % name
        return "nh ended (exit status %d)" % code

    def _request(self, req, on_output=None):
        """Sends REQ; passes each output message to ON_OUTPUT and returns
        the reply.  Raises NhEnded when nh ends first."""
        self._next_id += 1
        req = dict(req, id=self._next_id)
        try:
            self._nh.stdin.write((json.dumps(req) + "\n").encode("utf-8"))
            self._nh.stdin.flush()
        except (BrokenPipeError, OSError):
            raise NhEnded(self._ended())
        while True:
            line = self._nh.stdout.readline()
            if not line:
                raise NhEnded(self._ended())
            msg = json.loads(line.decode("utf-8"))
            if "reply" in msg:
                return msg
            if on_output is not None:
                on_output(msg)

    def _ensure(self):
        """A running nh: a fresh session when the last one ended."""
        if self._nh is None:
            self._start()

    # ---- Jupyter's requests -----------------------------------------------

    def _stream(self, name, text):
        self.send_response(self.iopub_socket, "stream",
                           {"name": name, "text": text})

    def _display(self, data):
        self.send_response(self.iopub_socket, "display_data",
                           {"data": data, "metadata": {}})

    @staticmethod
    def _figure(svg, png, pdf):
        """A plot's representations: the SVG element; the same drawing as
        PNG (what shows no SVG, an untrusted notebook's viewer, takes it)
        and as PDF (nbconvert's PDF takes it, and needs no Inkscape to
        convert the SVG); and as HTML an <img> of the SVG, which
        nbconvert's HTML export passes on as it is (its cleaner empties
        an inline SVG's drawing)."""
        data = {"image/svg+xml": svg, "text/plain": "<plot>"}
        if png:
            data["image/png"] = png
        if pdf:
            data["application/pdf"] = pdf
        b64 = base64.b64encode(svg.encode("utf-8")).decode("ascii")
        data["text/html"] = ('<img alt="plot" src="data:image/svg+xml;'
                             'base64,%s">' % b64)
        return data

    def _error_content(self, message, text):
        return {
            "ename": "error",
            "evalue": message,
            "traceback": text.rstrip("\n").split("\n"),
        }

    def do_execute(self, code, silent, store_history=True,
                   user_expressions=None, allow_stdin=False):
        error = None

        def on_output(msg):
            nonlocal error
            kind = msg.get("output")
            text = msg.get("text", "")
            if kind == "error":
                error = self._error_content(msg.get("message", ""), text)
                if not silent:
                    self.send_response(self.iopub_socket, "error", error)
            elif silent:
                return
            elif kind == "text":
                self._stream("stdout", text)
            elif kind == "stderr":
                self._stream("stderr", text)
            elif kind == "latex":
                self._display({"text/latex": msg["mathjax"],
                               "text/plain": text})
            elif kind == "svg":
                self._display(self._figure(text, msg.get("png"),
                                           msg.get("pdf")))
            elif kind == "html":
                self._display({"text/html": text,
                               "text/plain": "<nh animation>"})

        def on_sigint(signum, frame):
            if self._nh is not None:
                try:
                    os.kill(self._nh.pid, signal.SIGINT)
                except OSError:
                    pass

        req = {"request": "execute", "code": code}
        if not silent:
            req["cell"] = self.execution_count
        saved = signal.signal(signal.SIGINT, on_sigint)
        try:
            self._ensure()
            reply = self._request(req, on_output)
        except NhEnded as e:
            reply = None
            error = self._error_content(
                str(e), "%s: the session is lost; the next cell starts a "
                        "fresh one" % e)
            self.send_response(self.iopub_socket, "error", error)
        finally:
            signal.signal(signal.SIGINT, saved)
        if reply is not None and reply.get("reply") == "error":
            error = self._error_content(reply.get("message", ""),
                                        "nh: " + reply.get("message", ""))
            self.send_response(self.iopub_socket, "error", error)
        if reply is not None and reply.get("quit"):
            self._nh.wait()
            self._nh = None
            if not silent:
                self._stream("stderr", "the session ended (quit); the next "
                                       "cell starts a fresh one\n")
        if error is not None:
            return dict(error, status="error",
                        execution_count=self.execution_count)
        return {"status": "ok", "execution_count": self.execution_count,
                "payload": [], "user_expressions": {}}

    def do_complete(self, code, cursor_pos):
        # Jupyter counts characters, nh bytes of UTF-8.
        raw = code.encode("utf-8")
        at = len(code[:cursor_pos].encode("utf-8"))
        matches, start, end = [], at, at
        try:
            self._ensure()
            reply = self._request({"request": "complete",
                                   "code": code, "cursor": at})
            if reply.get("reply") == "complete":
                matches = reply["matches"]
                start, end = reply["cursor_start"], reply["cursor_end"]
        except NhEnded:
            pass
        return {
            "status": "ok",
            "matches": matches,
            "cursor_start": len(raw[:start].decode("utf-8", "replace")),
            "cursor_end": len(raw[:end].decode("utf-8", "replace")),
            "metadata": {},
        }

    def do_is_complete(self, code):
        try:
            self._ensure()
            reply = self._request({"request": "is_complete", "code": code})
        except NhEnded:
            return {"status": "unknown"}
        status = reply.get("status", "unknown")
        if status == "incomplete":
            return {"status": status, "indent": ""}
        return {"status": status}

    def do_shutdown(self, restart):
        if self._nh is not None:
            try:
                self._request({"request": "shutdown"})
                self._nh.wait(timeout=5)
            except (NhEnded, subprocess.TimeoutExpired):
                pass
            if self._nh is not None and self._nh.poll() is None:
                self._nh.kill()
                self._nh.wait()
            self._nh = None
        return {"status": "ok", "restart": restart}


def main():
    ap = argparse.ArgumentParser(description="the Jupyter kernel of nh")
    ap.add_argument("--nh", default="nh", help="the nh executable")
    ap.add_argument("-f", dest="connection_file", required=True,
                    help="Jupyter's connection file")
    args = ap.parse_args()
    NhKernel.nh_path = args.nh
    from ipykernel.kernelapp import IPKernelApp
    IPKernelApp.launch_instance(kernel_class=NhKernel,
                                argv=["-f", args.connection_file])


if __name__ == "__main__":
    main()
