include!("trainer/build_support.rs");

fn main() {
    emit_libtorch_link_args();
}
