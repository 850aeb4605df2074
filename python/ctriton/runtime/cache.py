"""Cache managers (``triton.runtime.cache``): a key names a directory of
files, written atomically. ``get_cache_manager(key)`` gives the class set by
``knobs.cache.manager_class`` (``TRITON_CACHE_MANAGER=module:Class``) or a
``FileCacheManager`` under ``knobs.cache.dir``.

ctriton's own kernel cache is the checksummed store of jit/cache.c; these
classes serve programs that keep their own files the Triton way.
"""
import os

# base64, json and uuid are imported by the methods that use them.


class CacheManager:
    """The interface: files of one key."""

    def __init__(self, key, override=False, dump=False):
        self.key = key

    def get_file(self, filename):
        raise NotImplementedError

    def put(self, data, filename, binary=True):
        raise NotImplementedError

    def get_group(self, filename):
        raise NotImplementedError

    def put_group(self, filename, group):
        raise NotImplementedError


class FileCacheManager(CacheManager):
    """Files under ``<cache dir>/<key>/`` (override and dump dirs when asked)."""

    def __init__(self, key, override=False, dump=False):
        super().__init__(key, override, dump)
        from .. import knobs
        if dump:
            root = knobs.cache.dump_dir
        elif override:
            root = knobs.cache.override_dir
        else:
            root = knobs.cache.dir
        self.cache_dir = os.path.join(root, key) if root else None
        if self.cache_dir and not override:
            os.makedirs(self.cache_dir, exist_ok=True)

    def _make_path(self, filename):
        return os.path.join(self.cache_dir, filename)

    def has_file(self, filename):
        return bool(self.cache_dir) and os.path.exists(self._make_path(filename))

    def get_file(self, filename):
        return self._make_path(filename) if self.has_file(filename) else None

    def get_group(self, filename):
        path = self.get_file(filename)
        if path is None:
            return None
        with open(path) as f:
            import json
            child_paths = json.load(f).get("child_paths", {})
        out = {}
        for name in list(child_paths):
            p = self.get_file(name)
            if p is None:
                return None
            out[name] = p
        return out

    def put_group(self, filename, group):
        data = {"child_paths": {name: os.path.basename(p) for name, p in group.items()}}
        import json
        return self.put(json.dumps(data), filename, binary=False)

    def put(self, data, filename, binary=True):
        if not self.cache_dir:
            raise RuntimeError("Could not create or locate cache dir")
        binary = isinstance(data, bytes)
        if not binary:
            data = str(data)
        path = self._make_path(filename)
        import uuid
        tmp_dir = os.path.join(self.cache_dir, f"tmp.pid_{os.getpid()}_{uuid.uuid4()}")
        os.makedirs(tmp_dir, exist_ok=True)
        tmp = os.path.join(tmp_dir, filename)
        with open(tmp, "wb" if binary else "w") as f:
            f.write(data)
        os.replace(tmp, path)
        os.rmdir(tmp_dir)
        return path


class RemoteCacheBackend:
    """A remote store of files of one key (subclass: get, put)."""

    def __init__(self, key):
        self.key = key

    def get(self, filenames):
        raise NotImplementedError

    def put(self, filename, data):
        raise NotImplementedError


class RedisRemoteCacheBackend(RemoteCacheBackend):
    def __init__(self, key):
        super().__init__(key)
        import redis  # noqa: F401  (only when used)
        from .. import knobs
        self._redis = redis.Redis(host=knobs.redis.host, port=knobs.redis.port)
        self._fmt = knobs.redis.key_format

    def _get_key(self, filename):
        return self._fmt.format(key=self.key, filename=filename)

    def get(self, filenames):
        vals = self._redis.mget([self._get_key(f) for f in filenames])
        return {f: v for f, v in zip(filenames, vals) if v is not None}

    def put(self, filename, data):
        self._redis.set(self._get_key(filename), data)


def _base32(key):
    # the directory name: a hex sha256 shortened the way Triton does
    import base64
    return base64.b32encode(bytes.fromhex(key)).decode().rstrip("=")


def get_cache_manager(key):
    from .. import knobs
    cls = knobs.cache.manager_class or FileCacheManager
    return cls(_base32(key))


def get_override_manager(key):
    from .. import knobs
    cls = knobs.cache.manager_class or FileCacheManager
    return cls(_base32(key), override=True)


def get_dump_manager(key):
    from .. import knobs
    cls = knobs.cache.manager_class or FileCacheManager
    return cls(_base32(key), dump=True)
