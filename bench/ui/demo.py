"""The release server with --demo on a fresh SQLite database, for the UI benchmarks: served at
http://localhost:PORT (browsers refuse WebAuthn on a bare IP), waited for until it listens."""
import contextlib, os, re, socket, subprocess, tempfile, time


@contextlib.contextmanager
def demo_server(bin_dir):
    """Yields (port, email, password) of the demo admin; stops the server after."""
    work = tempfile.mkdtemp()
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELLUM_")}
    env.update(VELLUM_DATABASE_URL=f"sqlite://{work}/v.db?mode=rwc", VELLUM_FILES_DIR=f"{work}/files",
               VELLUM_LISTEN=f"127.0.0.1:{port}", VELLUM_BASE_URL=f"http://localhost:{port}", VELLUM_LOG="warn")
    log = open(f"{work}/log", "wb")
    proc = subprocess.Popen([f"{bin_dir}/vellum-server", "--demo"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        found = None
        for _ in range(300):
            found = re.search(r"Demo admin \(shown once\): (\S+) / (\S+)", open(f"{work}/log").read())
            if found:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    pass
            time.sleep(0.1)
        if not found:
            raise RuntimeError(open(f"{work}/log").read()[-2000:])
        yield port, found.group(1), found.group(2)
    finally:
        proc.terminate(); proc.wait()
