//! The checks an op passes before it is accepted: protection, validation,
//! guards, structure and the lines it claims.

use super::*;

impl<'r, 'i, 'k> BatchRun<'r, 'i, 'k> {
    pub(super) fn protection(&self, origin: OpOrigin) -> ProtectionPolicy<'i> {
        ProtectionPolicy {
            regions: self.input.protected,
            strict: self.input.options.strict,
            origin,
        }
    }

    /// The op validated in the planned document. An op whose text is gone
    /// because the ledger already made it (an ops file given again) is
    /// known, not refused.
    pub(super) fn validated(&self, c: &Candidate) -> Result<ValidOp, Skip> {
        let protection = self.protection(c.origin);
        validate(
            &c.op,
            c.index,
            &self.planned_doc,
            self.input.ledger_ids,
            protection,
        )
        .map_err(|rejection| {
            if rejection.class == RejectClass::Hash {
                if let Some(id) = self.known.already_made(&c.op, &self.planned_doc) {
                    return Skip::Known(id, KnownAs::Applied);
                }
            }
            Skip::Refused(rejection)
        })
    }

    /// A change the ledger reverted (unless made `again`), or an insertion
    /// it already made, is known. Checked before the guards: a guard that
    /// turned the op into a flag would bring the change back as a note.
    pub(super) fn check_not_made_before(&self, valid: &ValidOp, again: bool) -> Result<(), Skip> {
        let Some(planned) = &valid.planned else {
            return Ok(());
        };
        let made = planned.change.clone().trimmed();
        if let Some(id) = self.known.reverted(&made.old, &made.new).filter(|_| !again) {
            return Err(Skip::Known(id, KnownAs::Reverted));
        }
        if made.old.is_empty() {
            if let Some(id) = self
                .known
                .inserted_at(&made.new, &self.planned_doc, made.start)
            {
                return Err(Skip::Known(id, KnownAs::Applied));
            }
        }
        Ok(())
    }

    /// Runs the content guards on a valid op, and validates it again when
    /// they turned a change into a flag. After validation: a guard's
    /// attention may not let through an op that validation refused (an
    /// unflagged edit of a protected region).
    pub(super) fn guard(&mut self, c: &mut Candidate, valid: &mut ValidOp) -> Result<(), Skip> {
        let before = match c.op.action {
            Action::Insert => String::new(),
            _ => c.op.before_text.clone().unwrap_or_else(|| {
                self.planned_doc
                    .target_text(c.op.target.line_start, c.op.target.line_end)
                    .unwrap_or_default()
            }),
        };
        let (old_lines, new_lines, structure) = match &valid.planned {
            Some(planned) => self.structure_seen(&planned.change),
            None => (String::new(), String::new(), Vec::new()),
        };
        let seen = guards::Seen {
            before: &before,
            lines: valid
                .planned
                .as_ref()
                .map(|_| (old_lines.as_str(), new_lines.as_str())),
            structure: &structure,
            origin: c.origin,
            strict: self.input.options.strict,
            policy: &self.input.options.policy,
        };
        let text = self.input.text;
        let guard_ctx = self.guard_ctx.get_or_insert_with(|| GuardContext::of(text));
        let guarded = guards::run(&mut c.op, &seen, guard_ctx);
        c.fixes.extend(guarded.fixes);
        if let Some((class, why)) = guarded.refused {
            return Err(Skip::Refused(Rejection::new(
                class,
                format!("{}: {why}", op_label(c.index)),
            )));
        }
        let downgraded = c.op.action == Action::FlagOnly && valid.planned.is_some();
        if downgraded {
            *valid = validate(
                &c.op,
                c.index,
                &self.planned_doc,
                self.input.ledger_ids,
                self.protection(c.origin),
            )?;
        }
        Ok(())
    }

    /// The lines a change replaces and writes, each side joined, and how
    /// it alters the Markdown structure: of the blocks around it, and of
    /// the changed lines on their own too (what the host checks of a
    /// silent change, see `koas_edit::effect::local_structure_changes`).
    pub(super) fn structure_seen(
        &mut self,
        change: &LineChange,
    ) -> (String, String, Vec<ShapeChange>) {
        let text = self.input.text;
        let blocks = self.blocks.get_or_insert_with(|| Blocks::of(text));
        let mut structure = structure_changes(
            &self.planned_doc,
            blocks,
            change.start,
            change.old.len(),
            &change.new,
        );
        let (old, new) = (change.old.concat(), change.new.concat());
        for local in local_structure_changes(&old, &new) {
            if !structure.iter().any(|c| c.what == local.what) {
                structure.push(local);
            }
        }
        (old, new, structure)
    }

    /// The lines and insertion point the op holds in the planned document:
    /// refused when they overlap those of an op accepted before it (a flag
    /// holds nothing).
    pub(super) fn claim_lines(&self, c: &Candidate, valid: &ValidOp) -> Result<Occupied, Skip> {
        let op = &c.op;
        let target_lines = match op.action {
            Action::FlagOnly => None,
            Action::Insert if op.target.line_end == 0 => None,
            _ => Some((op.target.line_start.max(1), op.target.line_end)),
        };
        let change_lines = valid
            .planned
            .as_ref()
            .filter(|p| !p.change.old.is_empty())
            .map(|p| (p.change.start + 1, p.change.start + p.change.old.len()));
        let lines = match (target_lines, change_lines) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, y) => x.or(y),
        };
        let candidate = Occupied {
            index: c.index,
            id: c.id,
            lines,
            insert_point: (op.action == Action::Insert).then_some(op.target.line_end),
        };
        if op.action != Action::FlagOnly {
            if let Some((other_index, other_id, at)) = self.occupied.overlap(&candidate) {
                let (s, e) = (op.target.line_start, op.target.line_end);
                return Err(Skip::Refused(Rejection::new(
                    RejectClass::Range,
                    format!(
                        "{}: {} {} op {} ({other_id}) at {at}; ops of one batch may not overlap — merge them into one op or drop one",
                        op_label(c.index),
                        if s == e { format!("line {s}") } else { format!("lines {s}–{e}") },
                        if s == e { "overlaps" } else { "overlap" },
                        other_index + 1
                    ),
                )));
            }
        }
        Ok(candidate)
    }

    /// The hash of the lines a flag flags in the planned document (`None`
    /// for a change). A flag is its lines and its kind: the same flag on
    /// the same text is recorded once, and a dismissed one stays
    /// dismissed.
    pub(super) fn flag_once(&mut self, c: &Candidate) -> Result<Option<String>, Skip> {
        let op = &c.op;
        if op.action != Action::FlagOnly {
            return Ok(None);
        }
        let (s, e) = (op.target.line_start.max(1), op.target.line_end);
        let lines = self
            .planned_doc
            .lines()
            .get(s - 1..e.max(s - 1).min(self.planned_doc.len()))
            .unwrap_or_default();
        let hash = sha256_of_parts(lines);
        let kind = op.kind.to_lowercase();
        let found = self.known.flag(&hash, &kind).or_else(|| {
            self.batch_flags
                .get(&(hash.clone(), kind.clone()))
                .map(|id| (*id, KnownAs::Flagged))
        });
        if let Some((id, known_as)) = found {
            return Err(Skip::Known(id, known_as));
        }
        self.batch_flags.insert((hash.clone(), kind), c.id);
        Ok(Some(hash))
    }
}
