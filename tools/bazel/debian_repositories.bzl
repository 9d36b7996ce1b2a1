"""External repositories of percpu, all taken from Debian 12 packages.

Bazel 4.2.3 (bazel-bootstrap) references none of Debian's rule sets by
default, and would try to download rules_cc, rules_java and
remote_coverage_tools. Each is provided here from a local directory.
"""

_RULES_CC_DIR = "/usr/share/bazel/rules/cc"
_RULES_JAVA_DIR = "/usr/share/bazel/rules/java"

def _debian_rules_cc_impl(rctx):
    """Copies Debian's rules_cc and adapts it to Bazel 4.2.3.

    Debian ships a rules_cc newer than Bazel 4.2.3: two of its rules load
    use_cpp_toolchain() from @bazel_tools, which 4.2.3 lacks. They are
    pointed at the C++ toolchain type directly, which is what that helper
    returns.
    """
    src = rctx.attr.path
    result = rctx.execute(["cp", "-R", src + "/.", "."])
    if result.return_code != 0:
        fail("cannot copy %s (install bazel-rules-cc: tools/setup.sh): %s" %
             (src, result.stderr))
    for f in [
        "cc/private/rules_impl/compiler_flag.bzl",
        "cc/private/rules_impl/cc_flags_supplier.bzl",
    ]:
        text = rctx.read(f)
        text = text.replace(
            '"find_cpp_toolchain", "use_cpp_toolchain")',
            '"find_cpp_toolchain")',
        )
        text = text.replace(
            "use_cpp_toolchain()",
            '["@bazel_tools//tools/cpp:toolchain_type"]',
        )
        rctx.file(f, text)

_debian_rules_cc = repository_rule(
    implementation = _debian_rules_cc_impl,
    attrs = {"path": attr.string(default = _RULES_CC_DIR)},
    local = True,
)

def _coverage_tools_stub_impl(rctx):
    """Satisfies the implicit @remote_coverage_tools dependency of tests.

    Every test rule names a coverage merger; percpu does not run
    `bazel coverage`, so an executable that explains this suffices.
    """
    rctx.file("unsupported.sh", "#!/bin/sh\necho 'percpu: coverage is not configured' >&2\nexit 1\n", executable = True)
    rctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
sh_binary(name = "lcov_merger", srcs = ["unsupported.sh"])
sh_binary(name = "coverage_report_generator", srcs = ["unsupported.sh"])
""")

_coverage_tools_stub = repository_rule(implementation = _coverage_tools_stub_impl)

def percpu_debian_repositories():
    _debian_rules_cc(name = "rules_cc")
    native.local_repository(name = "rules_java", path = _RULES_JAVA_DIR)
    _coverage_tools_stub(name = "remote_coverage_tools")

    # Header-only test framework from doctest-dev. A repository (not the
    # host's /usr/include) so that cross compilers, which do not search
    # /usr/include, find it too.
    native.new_local_repository(
        name = "doctest",
        path = "/usr/include/doctest",
        build_file = str(Label("//third_party:doctest.BUILD")),
    )

    # Header-only Boost.Atomic (boost::atomic_ref for C++17 builds), from
    # libboost-atomic-dev. Only headers: libboost_atomic is not linked, since
    # the cross targets have no build of it.
    native.new_local_repository(
        name = "boost",
        path = "/usr/include/boost",
        build_file = str(Label("//third_party:boost.BUILD")),
    )

    # Google Benchmark from libbenchmark-dev (host only: bench/ runs on the
    # host).
    native.new_local_repository(
        name = "benchmark",
        path = "/usr",
        build_file = str(Label("//third_party:benchmark.BUILD")),
    )
