// Small readers for sysfs-style trees (also used on fixture trees).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace aml {

// The file's contents without the trailing newline; nullopt if unreadable.
std::optional<std::string> ReadSysfsFile(const std::string& path);
// Entry names in a directory (no "." / ".."), sorted; empty if none.
std::vector<std::string> ListSysfsDir(const std::string& path);
// The last path component of the link's resolved target, e.g. the PCI address
// "0000:01:00.0" for ".../device"; nullopt if not a resolvable link.
std::optional<std::string> LinkTargetName(const std::string& path);
bool PathExists(const std::string& path);

}  // namespace aml
