#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""
mapwrite.py MAP KEY FILE: write FILE's bytes as the value of u32 key KEY in
BPF map MAP (a pinned path, or id:N), with the bpf(2) system call itself.

For values too large for `bpftool map update ... value hex B B B...`, which
takes one argument per byte: a source set of 182,352 bytes comes within a
few per cent of the kernel's limit on a command's arguments (a quarter of the
stack limit, pointers counted). The kernel reads as many bytes as the map's
value size, so a file of another size, a map whose key is not 4 bytes or a
key past an array's end is refused before any write. Exits non-zero with one
line on any error.
"""
import ctypes
import os
import struct
import sys

SYS_BPF = {"x86_64": 321, "aarch64": 280}[os.uname().machine]
BPF_MAP_UPDATE_ELEM = 2
BPF_OBJ_GET = 7
BPF_MAP_GET_FD_BY_ID = 14
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_MAP_TYPE_ARRAY = 2

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def bpf(cmd, attr):
    """bpf(cmd, attr): the result, or an OSError with errno."""
    buf = ctypes.create_string_buffer(attr, 128)
    ret = libc.syscall(SYS_BPF, cmd, buf, ctypes.c_uint(128))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def map_fd(name):
    if name.startswith("id:"):
        return bpf(BPF_MAP_GET_FD_BY_ID, struct.pack("=III", int(name[3:]), 0, 0))
    path = ctypes.create_string_buffer(name.encode())
    return bpf(BPF_OBJ_GET, struct.pack("=QII", ctypes.addressof(path), 0, 0))


def map_info(fd):
    """struct bpf_map_info's type, id, key_size, value_size, max_entries."""
    info = ctypes.create_string_buffer(20)
    bpf(BPF_OBJ_GET_INFO_BY_FD, struct.pack("=IIQ", fd, len(info), ctypes.addressof(info)))
    return struct.unpack_from("=IIIII", info.raw)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: mapwrite.py MAP KEY FILE")
    name, key, file = sys.argv[1:]
    try:
        with open(file, "rb") as f:
            data = f.read()
        fd = map_fd(name)
        kind, _, key_size, value_size, entries = map_info(fd)
        if key_size != 4 or len(data) != value_size:
            raise ValueError(f"the map takes {key_size}-byte keys and {value_size}-byte values, "
                             f"{file} holds {len(data)} bytes")
        if kind == BPF_MAP_TYPE_ARRAY and not 0 <= int(key) < entries:
            raise ValueError(f"the array has keys 0 .. {entries - 1}")
        value = ctypes.create_string_buffer(data)
        k = ctypes.create_string_buffer(struct.pack("=I", int(key)))
        bpf(BPF_MAP_UPDATE_ELEM, struct.pack("=IIQQQ", fd, 0, ctypes.addressof(k),
                                             ctypes.addressof(value), 0))
    except (OSError, ValueError, struct.error) as e:
        sys.exit(f"mapwrite.py: {name} key {key}: {e}")


if __name__ == "__main__":
    main()
