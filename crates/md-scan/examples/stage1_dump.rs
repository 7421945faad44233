//! Prints the Stage 1 artifacts `koas check` computes for a document (for
//! debugging a finding): `cargo run -p koas-md-scan --example stage1_dump -- DOC [sections|anchors|protected|chunks]`.

use koas_md_scan::stage1::Stage1Artifacts;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: stage1_dump DOC [sections|anchors|protected|chunks]");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let s1 = Stage1Artifacts::compute(&text);
    let value = match args.next().as_deref().unwrap_or("sections") {
        "anchors" => serde_json::to_value(&s1.anchors),
        "protected" => serde_json::to_value(&s1.protected),
        "chunks" => serde_json::to_value(&s1.chunks),
        _ => serde_json::to_value(&s1.sections),
    };
    match value.and_then(|v| serde_json::to_string_pretty(&v)) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("{e}"),
    }
}
