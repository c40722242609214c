//! Write starting corpora for the cargo-fuzz targets into `fuzz/corpus/`:
//! the engine-built seed data file (whole and cut) for `check_file`, a few
//! edit lists for `open_corrupt`. `cargo run --release --example seed_corpus`.
fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let seed = mdb_fuzz::seed::seed_file();
    let cf = root.join("check_file");
    std::fs::create_dir_all(&cf).unwrap();
    std::fs::write(cf.join("seed-whole.mdb"), &seed.bytes).unwrap();
    std::fs::write(cf.join("seed-metas.mdb"), &seed.bytes[..2 * seed.psize]).unwrap();
    std::fs::write(
        cf.join("seed-half.mdb"),
        &seed.bytes[..seed.bytes.len() / 2],
    )
    .unwrap();
    let oc = root.join("open_corrupt");
    std::fs::create_dir_all(&oc).unwrap();
    std::fs::write(oc.join("pristine"), b"").unwrap();
    // One edit in each region kind: whole file, meta, page header, node area.
    for (i, mode) in [0x00u8, 0x04, 0x14, 0x08, 0x0c].iter().enumerate() {
        std::fs::write(
            oc.join(format!("edit-{i}")),
            [0x10, 0x02, 0x00, *mode, 0x01],
        )
        .unwrap();
    }
    std::fs::create_dir_all(root.join("ops_model")).unwrap();
    println!("corpora written under {}", root.display());
}
