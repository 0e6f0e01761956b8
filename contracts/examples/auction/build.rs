fn main() {
    sails_rs::build_wasm();
}
