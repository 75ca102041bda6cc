"""No package in Cargo.lock may need a newer Rust than the crate declares.

Reads `cargo metadata --format-version 1` on stdin: a user on the crate's
`rust-version` could not build a dependency that declares a later one.
"""

import json
import sys


def version(text):
    parts = [int(part) for part in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


metadata = json.load(sys.stdin)
packages = metadata["packages"]
root = metadata["resolve"]["root"]
crate = next(package for package in packages if package["id"] == root)
declared = crate["rust_version"]
newer = sorted(
    f"{package['name']} {package['version']} needs Rust {package['rust_version']}"
    for package in packages
    if package.get("rust_version") and version(package["rust_version"]) > version(declared)
)
if newer:
    sys.exit(f"rust-version {declared} is older than Cargo.lock needs:\n  " + "\n  ".join(newer))
print(f"{len(packages) - 1} packages in Cargo.lock, none needs more than Rust {declared}")
