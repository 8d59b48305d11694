//! The shared library's SONAME: `libroundtable.so.0`, so a host links
//! against the ABI's major version (`RT_ABI_VERSION` changes only with a
//! new major) and a packager can install `libroundtable.so.0.x.y` beside
//! it. Writes nothing into the source tree.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libroundtable.so.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
