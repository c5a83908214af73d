//! Published models, class by class: model cards ([`card`]) for weights other libraries
//! wrote, the catalogue of RobustBench's L∞ zoo ([`catalogue`]), and a card as a source of
//! models for every `classwise eval` job ([`source`]).

pub mod card;
pub mod catalogue;
pub mod export;
pub mod leaderboard;
pub mod source;
pub mod text;

pub use card::{CardNormalization, ModelCard, ThreatModel};
pub use catalogue::Catalogue;
pub use source::CardSource;

use crate::error::{Result, invalid};

/// A card that names a catalogue entry (`catalogue = "…"`, or a `name` the catalogue has for
/// its data set) must agree with it on the architecture and the normalisation: a card
/// without the normalisation the catalogue records would give wrong numbers silently.
pub fn agree_with_catalogue(card: &ModelCard, catalogue: &Catalogue) -> Result<()> {
    let name = card.catalogue.as_deref().unwrap_or(&card.name);
    let entry = match catalogue.find(name, Some(card.dataset)) {
        Ok(entry) => entry,
        Err(e) if card.catalogue.is_some() => return Err(e),
        Err(_) => return Ok(()),
    };
    if entry.architecture != card.architecture {
        return Err(invalid(
            format!("card `{}`: architecture", card.name),
            card.architecture.name(),
            format!(
                "{}, as the catalogue entry {} records",
                entry.architecture.name(),
                entry.name
            ),
        ));
    }
    if entry.normalization.as_ref() != card.normalization.get() {
        let want = entry
            .normalization
            .as_ref()
            .map_or("none".to_owned(), |n| n.describe());
        return Err(invalid(
            format!("card `{}`: normalization", card.name),
            card.normalization.describe(),
            format!(
                "{want}, as the catalogue entry {} records ({})",
                entry.name, entry.source
            ),
        ));
    }
    Ok(())
}
