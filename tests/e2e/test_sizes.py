"""README.md says what the two commands download and take on disk: those
figures are measured, not written by hand. scripts/sizes.sh asks apt, in a
fresh minimal Debian 12 root, what each of scripts/setup.sh's package sets
costs; the README's figures must be within 15% of it (Debian's point
releases move them a little)."""
import os
import re
import unittest

from harness import SRC, main, require, run


class Sizes(unittest.TestCase):
    def test_the_readme_says_what_the_two_commands_download_and_use(self):
        require("debootstrap")
        if os.geteuid() != 0:
            raise AssertionError("this test needs root (debootstrap, chroot): run it with sudo")
        r = run([os.path.join(SRC, "scripts", "sizes.sh")], timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        measured = {m[0]: (int(m[1]), int(m[2])) for m in
                    re.findall(r"^sizes: (\w+) download (\d+) disk (\d+)$", r.stdout, re.M)}
        self.assertEqual(set(measured), {"build", "demo", "tests"}, r.stdout)
        with open(os.path.join(SRC, "README.md")) as f:
            readme = " ".join(f.read().split())
        said = re.search(r"the build's packages download (\d+) MB \((\d+) MB on disk\), the demo's "
                         r"(\d+) MB more \((\d+) MB: [^)]*\), the tests' (\d+) MB more \((\d+) MB\)",
                         readme)
        self.assertIsNotNone(said, "README.md no longer says the sizes in its words")
        figures = [int(x) for x in said.groups()]
        for (name, (download, disk)), (r_download, r_disk) in zip(
                [(n, measured[n]) for n in ("build", "demo", "tests")],
                [figures[0:2], figures[2:4], figures[4:6]]):
            for what, real, readme_says in (("download", download, r_download),
                                            ("disk", disk, r_disk)):
                self.assertLessEqual(abs(readme_says - real), 0.15 * real,
                                     f"{name} {what}: README says {readme_says} MB, measured "
                                     f"{real} MB:\n{r.stdout}")


if __name__ == "__main__":
    main()
