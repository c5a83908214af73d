//! Decoding speed of the Tiny-ImageNet loader, without and with its cache of decoded images.
//!
//! ```sh
//! cargo run --release -p classwise-trainer --example tiny_imagenet_decoding [-- IMAGES]
//! ```
//!
//! Writes a directory in Tiny-ImageNet-200's layout (`wnids.txt`, `train/<wnid>/images/*.JPEG`,
//! `val/images` with `val_annotations.txt`) holding IMAGES training JPEGs of 64×64 (default
//! 2,000) over three classes into a temporary directory, then loads its training part twice:
//! decoding every JPEG and writing the cache, then reading the cache. Prints images per second
//! of each. The real data set has 100,000 training images.

use std::path::Path;
use std::time::Instant;

use classwise_trainer::data::tiny_imagenet::load_tiny_imagenet;
use classwise_trainer::data::{Counts, ImageCache, Part};
use image::codecs::jpeg::JpegEncoder;

const WNIDS: [&str; 3] = ["n01443537", "n01629819", "n01641577"];

fn write_jpeg(path: &Path, seed: usize) -> anyhow::Result<()> {
    std::fs::create_dir_all(path.parent().expect("a file in a directory"))?;
    let img = image::RgbImage::from_fn(64, 64, |x, y| {
        let v = (seed * 31 + x as usize * 7 + y as usize * 13) % 256;
        image::Rgb([v as u8, (255 - v) as u8, ((v * 3) % 256) as u8])
    });
    let f = std::fs::File::create(path)?;
    image::DynamicImage::ImageRgb8(img).write_with_encoder(JpegEncoder::new_with_quality(f, 90))?;
    Ok(())
}

fn write_layout(dir: &Path, images: usize) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("wnids.txt"), WNIDS.join("\n") + "\n")?;
    for j in 0..images {
        let wnid = WNIDS[j % WNIDS.len()];
        let class_dir = dir.join("train").join(wnid);
        write_jpeg(
            &class_dir.join("images").join(format!("{wnid}_{j}.JPEG")),
            j,
        )?;
        std::fs::write(class_dir.join(format!("{wnid}_boxes.txt")), "")?;
    }
    let mut annotations = String::new();
    for (i, wnid) in WNIDS.iter().enumerate() {
        let name = format!("val_{i}.JPEG");
        write_jpeg(&dir.join("val").join("images").join(&name), i)?;
        annotations.push_str(&format!("{name}\t{wnid}\t0\t0\t63\t63\n"));
    }
    std::fs::write(dir.join("val").join("val_annotations.txt"), annotations)?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let images: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 2_000,
    };
    anyhow::ensure!(
        images >= WNIDS.len(),
        "IMAGES must be at least {}",
        WNIDS.len()
    );
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("tiny-imagenet-200");
    write_layout(&dir, images)?;
    let cache = ImageCache::In(tmp.path().join("cache"));
    for what in ["decode + write cache", "read cache"] {
        let t = Instant::now();
        let d = load_tiny_imagenet(&dir, Part::Train, Counts::Any, &cache)?;
        let s = t.elapsed().as_secs_f64();
        println!(
            "{what}: {} images in {s:.2} s ({:.0} images/s)",
            d.len(),
            d.len() as f64 / s
        );
    }
    Ok(())
}
