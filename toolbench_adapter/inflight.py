# TEMPORARY STUB (lead): replaced by the caps branch
import threading
class Cap:
    def __init__(self, url, n, rate_per_s=None):
        self.url, self.max_in_flight = url, n
        self.sem = threading.Semaphore(n)
    def __enter__(self): self.sem.acquire(); return self
    def __exit__(self, *a): self.sem.release()
_CAPS = {}
def set_cap(url, n, rate_per_s=None):
    _CAPS[url.rstrip("/")] = c = Cap(url, n, rate_per_s); return c
def cap_for(url): return _CAPS.get(url.rstrip("/"))
def clear_cap(url): _CAPS.pop(url.rstrip("/"), None)
