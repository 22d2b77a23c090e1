//! The `list` package.

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

use super::{arity, concrete, fail, int, R};
use crate::cue::ast::Pos;
use crate::cue::eval::Evaluator;
use crate::cue::value::{small_uint, to_f64, Val};

pub(super) fn list(ev: &mut Evaluator, name: &str, a: &[Val], pos: Pos) -> R {
    let want = |k: usize| arity(name, a, k, pos);
    let at = |i: usize| a.get(i).cloned().unwrap_or(Val::Top);
    let short = name.trim_start_matches("list.");
    match short {
        "Concat" => {
            want(1)?;
            let outer = ev.list_items(&concrete(&at(0), pos)?, pos)?;
            let mut out = Vec::new();
            for l in outer {
                out.extend(ev.list_items(&concrete(&l, pos)?, pos)?);
            }
            Ok(ev.make_list(out, pos))
        }
        "Range" => {
            want(3)?;
            let (start, limit, step) = (
                concrete(&at(0), pos)?,
                concrete(&at(1), pos)?,
                concrete(&at(2), pos)?,
            );
            range(ev, &start, &limit, &step, pos)
        }
        "Contains" => {
            want(2)?;
            let items = ev.list_items(&concrete(&at(0), pos)?, pos)?;
            let needle = ev.json_of(&at(1)).map_err(|e| fail(e.message, pos))?;
            for i in items {
                if ev.json_of(&i).ok().as_ref() == Some(&needle) {
                    return Ok(Val::Bool(true));
                }
            }
            Ok(Val::Bool(false))
        }
        "FlattenN" | "Flatten" => {
            let depth = if short == "FlattenN" {
                want(2)?;
                int(&at(1), pos)?.to_i64().unwrap_or(-1)
            } else {
                want(1)?;
                -1
            };
            let items = ev.list_items(&concrete(&at(0), pos)?, pos)?;
            let mut out = Vec::new();
            flatten(ev, items, depth, &mut out, pos)?;
            Ok(ev.make_list(out, pos))
        }
        "Repeat" => {
            want(2)?;
            let items = ev.list_items(&concrete(&at(0), pos)?, pos)?;
            let c = small_uint(&concrete(&at(1), pos)?)
                .filter(|c| c.saturating_mul(items.len()) <= 100_000)
                .ok_or_else(|| fail("invalid repeat count", pos))?;
            let mut out = Vec::new();
            for _ in 0..c {
                out.extend(items.iter().cloned());
            }
            Ok(ev.make_list(out, pos))
        }
        "Sum" | "Max" | "Min" => {
            want(1)?;
            let items = ev.list_items(&concrete(&at(0), pos)?, pos)?;
            let mut acc: Option<Val> = if short == "Sum" {
                Some(Val::Int(BigInt::from(0)))
            } else {
                None
            };
            for i in items {
                let i = concrete(&i, pos)?;
                acc = Some(match acc {
                    None => i,
                    Some(x) => match short {
                        "Sum" => crate::cue::value::arith('+', &x, &i).map_err(|m| fail(m, pos))?,
                        "Max" => {
                            if crate::cue::value::compare(&i, &x)
                                .is_some_and(std::cmp::Ordering::is_gt)
                            {
                                i
                            } else {
                                x
                            }
                        }
                        _ => {
                            if crate::cue::value::compare(&i, &x)
                                .is_some_and(std::cmp::Ordering::is_lt)
                            {
                                i
                            } else {
                                x
                            }
                        }
                    },
                });
            }
            acc.ok_or_else(|| fail("empty list", pos))
        }
        _ => Err(fail("not supported", pos)),
    }
}

pub(super) fn range(ev: &mut Evaluator, start: &Val, limit: &Val, step: &Val, pos: Pos) -> R {
    let mut out = Vec::new();
    if let (Val::Int(s0), Val::Int(l), Val::Int(st)) = (start, limit, step) {
        if st.is_zero() {
            return Err(fail("step must be non zero", pos));
        }
        let mut x = s0.clone();
        while (st.is_positive() && &x < l) || (st.is_negative() && &x > l) {
            out.push(Val::Int(x.clone()));
            x += st;
            if out.len() > 100_000 {
                return Err(fail("range too long", pos));
            }
        }
        return Ok(ev.make_list(out, pos));
    }
    let (Some(mut x), Some(l), Some(st)) = (to_f64(start), to_f64(limit), to_f64(step)) else {
        return Err(fail("range needs numbers", pos));
    };
    if st == 0.0 {
        return Err(fail("step must be non zero", pos));
    }
    while (st > 0.0 && x < l) || (st < 0.0 && x > l) {
        out.push(Val::Float(x, crate::cue::value::SHORTEST));
        x += st;
        if out.len() > 100_000 {
            return Err(fail("range too long", pos));
        }
    }
    Ok(ev.make_list(out, pos))
}

pub(super) fn flatten(
    ev: &mut Evaluator,
    items: Vec<Val>,
    depth: i64,
    out: &mut Vec<Val>,
    pos: Pos,
) -> Result<(), Val> {
    for i in items {
        let d = i.default_value();
        if matches!(d, Val::List(_)) && depth != 0 {
            let inner = ev.list_items(&d, pos)?;
            flatten(ev, inner, depth - 1, out, pos)?;
        } else {
            out.push(i);
        }
    }
    Ok(())
}
