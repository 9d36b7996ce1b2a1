"""C++ toolchains of percpu: the host gcc and clang, and three Debian cross
compilers. All are declared explicitly (no auto-configuration), so every
config builds with exactly the compiler and flags named here."""

load("@bazel_tools//tools/cpp:unix_cc_toolchain_config.bzl", "cc_toolchain_config")
load("@rules_cc//cc:defs.bzl", "cc_toolchain")

def percpu_cc_toolchain(
        name,
        cpu,
        compiler,
        tools,
        target_system_name,
        target_compatible_with,
        include_directories,
        link_flags = [],
        extra_compile_flags = []):
    """Declares a cc_toolchain and its toolchain() registration.

    Args:
      name: base name of the generated targets.
      cpu: Bazel's name for the target cpu.
      compiler: "gcc" or "clang".
      tools: dict of tool name ("gcc", "ar", ...) to absolute path.
      target_system_name: GNU triplet.
      target_compatible_with: constraint values of the target platform.
      include_directories: directories the compiler searches by itself.
      link_flags: extra flags for every link.
      extra_compile_flags: extra flags for every compile.
    """
    tool_paths = {
        "ar": tools["ar"],
        "cpp": tools["cpp"],
        "gcc": tools["gcc"],
        "gcov": "/bin/false",
        # unix_cc_toolchain_config requires an entry; coverage is not used.
        "llvm-cov": "/bin/false",
        "ld": tools["ld"],
        "nm": tools["nm"],
        "objdump": tools["objdump"],
        "strip": tools["strip"],
        "dwp": "/bin/false",
    }
    cc_toolchain_config(
        name = name + "_config",
        cpu = cpu,
        compiler = compiler,
        toolchain_identifier = name,
        host_system_name = "x86_64-linux-gnu",
        target_system_name = target_system_name,
        target_libc = "glibc",
        abi_version = compiler,
        abi_libc_version = "glibc",
        cxx_builtin_include_directories = include_directories,
        tool_paths = tool_paths,
        compile_flags = [
            "-fstack-protector",
            "-Wall",
            "-Wextra",
            "-fno-omit-frame-pointer",
        ] + extra_compile_flags,
        dbg_compile_flags = ["-g"],
        opt_compile_flags = [
            "-g0",
            "-O2",
            "-DNDEBUG",
            "-ffunction-sections",
            "-fdata-sections",
        ],
        # C++17 is the floor every public header supports; targets that
        # need C++20 (the model checker) add -std=c++20 after this.
        cxx_flags = ["-std=c++17"],
        link_flags = ["-Wl,-no-as-needed", "-Wl,-z,relro,-z,now"] + link_flags,
        link_libs = ["-lstdc++", "-lm", "-lpthread"],
        opt_link_flags = ["-Wl,--gc-sections"],
        unfiltered_compile_flags = [
            "-Wno-builtin-macro-redefined",
            "-D__DATE__=\"redacted\"",
            "-D__TIMESTAMP__=\"redacted\"",
            "-D__TIME__=\"redacted\"",
        ] + (["-fno-canonical-system-headers"] if compiler == "gcc" else []),
        supports_start_end_lib = False,
    )
    cc_toolchain(
        name = name + "_cc_toolchain",
        toolchain_identifier = name,
        toolchain_config = ":" + name + "_config",
        all_files = ":empty",
        ar_files = ":empty",
        as_files = ":empty",
        compiler_files = ":empty",
        dwp_files = ":empty",
        linker_files = ":empty",
        objcopy_files = ":empty",
        strip_files = ":empty",
        supports_param_files = 1,
    )
    native.toolchain(
        name = name,
        exec_compatible_with = [
            "@platforms//cpu:x86_64",
            "@platforms//os:linux",
        ],
        target_compatible_with = target_compatible_with,
        toolchain = ":" + name + "_cc_toolchain",
        toolchain_type = "@bazel_tools//tools/cpp:toolchain_type",
    )

def gnu_tools(prefix, version = ""):
    """Tool paths of a Debian GNU toolchain, e.g. prefix "aarch64-linux-gnu-"."""
    return {
        "ar": "/usr/bin/%sar" % prefix,
        "cpp": "/usr/bin/%scpp%s" % (prefix, version),
        "gcc": "/usr/bin/%sgcc%s" % (prefix, version),
        "ld": "/usr/bin/%sld" % prefix,
        "nm": "/usr/bin/%snm" % prefix,
        "objdump": "/usr/bin/%sobjdump" % prefix,
        "strip": "/usr/bin/%sstrip" % prefix,
    }
