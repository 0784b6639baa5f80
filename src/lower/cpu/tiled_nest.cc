#include "lower/cpu/tiled_nest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "ir/analysis.h"
#include "schedule/prefetch_hints.h"

namespace loom {

namespace {

// The range of one axis at the current point of the nest.
struct Region {
  Expr base;                           // global start
  Expr size;                           // actual extent (the last tile may be cut short)
  std::optional<int64_t> const_size;   // when known at compile time
  int64_t nominal = 0;                 // tile size bounding `size`; 0 when unbounded
  std::vector<std::pair<Expr, int64_t>> terms;  // loops opened below level 0: (variable, tile)
  int64_t multiple = 1;                // every size it takes is a multiple of this (unused with const_size)
};

// A loop open around the current point of the nest: its tile index (a
// variable, or a constant in a peeled remainder), its tiles and its axis.
struct OpenLoop {
  Expr tile;
  Expr count;
  int axis = 0;
};

struct PackedAccess {
  BufferRef buffer;
  std::vector<OpenLoop> enclosing;   // the loops open at the latest pack point
  std::vector<size_t> terms_before;  // per axis: loops already open at the pack point
  std::vector<int64_t> nominal;      // per axis: region size at the pack point
};

Expr and_all(const std::vector<Expr>& conds) {
  Expr c;
  for (const Expr& x : conds) c = c.defined() ? (c && x) : x;
  return c;
}

class TiledNest {
 public:
  explicit TiledNest(const TiledNestInputs& in)
      : in_(in), an_(*in.anchor), s_(*in.state), reg_(s_.reg_level()),
        line_elems_(std::max(1, in.caches.line_bytes / 4)), packed_(an_.accesses.size()),
        peels_borders_(size_t(an_.num_axes()), true) {
    for (int a : s_.order[reg_ - 1])
      if (an_.is_reduce_axis(a)) reduce_order_.push_back(a);
    for (int a : s_.order[reg_])
      if (a != s_.vec_axis) element_order_.push_back(a);
    if (s_.vec_axis >= 0 && !an_.is_reduce_axis(s_.vec_axis)) element_order_.push_back(s_.vec_axis);
  }

  Stmt build() {
    const int n = an_.num_axes();
    std::vector<Region> r(n);
    Var outer(an_.stage.name() + "_tile");
    std::vector<Expr> counts(n);
    Expr total = make_int(1);
    for (int a = 0; a < an_.num_spatial; ++a) {
      counts[a] = ceil_div(an_.extents[a], s_.tile[0][a]);
      total = total * counts[a];
    }
    Expr rest = outer;
    std::vector<Expr> tile_of(n);
    for (int i = int(s_.order[0].size()) - 1; i >= 0; --i) {
      const int a = s_.order[0][i];
      const int64_t T = s_.tile[0][a];
      tile_of[a] = counts[a].as_const_int() == 1 ? make_int(0) : i == 0 ? rest : rest % counts[a];
      if (i > 0) rest = rest / counts[a];
      r[a] = cut(Region{make_int(0), an_.extents[a], const_of(an_.extents[a]), 0, {}}, tile_of[a], T);
      r[a].terms.clear();  // level-0 offsets lie outside every pack region
    }
    for (int a = an_.num_spatial; a < n; ++a) {
      auto c = const_of(an_.extents[a]);
      r[a] = Region{make_int(0), an_.extents[a], c, c.value_or(0), {}};
    }
    Stmt body = tiles(r, counts, tile_of);
    // Too many peeled copies (border tiles, remainders along several axes
    // and levels): compile time is bounded before speed, the border tiles
    // run in their loop (along the innermost loop's axis first), then the
    // remainders as tiles cut short at run time.
    const auto order = s_.order[reg_];
    for (const int* a = order.end(); micro_kernels_ > StateData::kMaxMicroKernelCopies && a != order.begin();) {
      if (!peels_borders_[size_t(*--a)]) continue;
      peels_borders_[size_t(*a)] = false;
      body = tiles(r, counts, tile_of);
    }
    if (micro_kernels_ > StateData::kMaxMicroKernelCopies) {
      peel_ = false;
      body = tiles(r, counts, tile_of);
    }
    for (auto it = packed_.rbegin(); it != packed_.rend(); ++it)
      if (it->buffer) body = make_allocate(it->buffer, body);
    if (total.as_const_int() == 1) return body;  // every level-0 index is 0
    return make_for(outer, total, ForKind::Parallel, body);
  }

 private:
  // The nest inside one parallel tile.
  Stmt tiles(const std::vector<Region>& r, const std::vector<Expr>& counts, const std::vector<Expr>& tile_of) {
    micro_kernels_ = 0;
    const int v = s_.vec_axis;
    if (!peel_ || v < 0 || v >= an_.num_spatial || s_.vec_width == 1 || r[v].const_size || !const_of(an_.extents[v]))
      return level(1, 0, r);
    // The parallel tiles along the vector axis are whole but the last: each
    // kind of tile runs with its constant size (see level()).
    const int64_t E = *const_of(an_.extents[v]), T = s_.tile[0][v], last = *counts[v].as_const_int() - 1;
    std::vector<Region> whole = r, tail = r;
    whole[v] = sized(r[v], T);
    tail[v] = sized(r[v], E - last * T);
    return make_if(tile_of[v] == last, level(1, 0, tail), level(1, 0, whole));
  }

  static std::optional<int64_t> const_of(const Expr& e) { return e.as_const_int(); }
  static Expr ceil_div(const Expr& e, int64_t t) { return (e + (t - 1)) / t; }

  // `region` with its size known to be `n`.
  static Region sized(Region region, int64_t n) {
    region.size = make_int(n);
    region.const_size = n;
    return region;
  }

  // The sub-range of `parent` taken by tile `t` of size T. Its size is
  // known to be T when every size the parent takes is a multiple of T (an
  // extent of 14 in tiles of 8, then of 2: the tiles of 2 are all whole);
  // else its sizes are multiples of what T and the parent's sizes share.
  static Region cut(const Region& parent, const Expr& t, int64_t T) {
    Region r = parent;
    r.base = parent.base + t * T;
    r.nominal = T;
    r.terms.push_back({t, T});
    const int64_t multiple = parent.const_size.value_or(parent.multiple);
    if (multiple % T == 0) {
      r = sized(r, T);
    } else if (parent.const_size && *parent.const_size <= T) {
      r.size = parent.size;
    } else {
      r.size = min(make_int(T), parent.size - t * T);
      r.const_size.reset();
      r.multiple = std::gcd(multiple, T);
    }
    return r;
  }

  Stmt level(int l, size_t pos, std::vector<Region> r) {
    std::vector<Stmt> seq;
    if (l < reg_)
      for (size_t i = 0; i < an_.accesses.size(); ++i)
        if (s_.pack[i] == s_.make_pack_point(l, int(pos))) seq.push_back(pack(int(i), r));
    if (pos == s_.order[l].size()) {
      seq.push_back(l == reg_ ? micro_kernel(r) : level(l + 1, 0, r));
      return make_seq(seq);
    }
    const int a = s_.order[l][pos];
    const int64_t T = s_.tile[l][a];
    if (r[a].const_size && *r[a].const_size <= T) {
      r[a].nominal = std::min(r[a].nominal ? r[a].nominal : T, T);
      seq.push_back(level(l, pos + 1, r));
      return make_seq(seq);
    }
    // Appended, not `"t" + std::to_string(l) + ...`: gcc 12 warns falsely
    // (-Wrestrict) on a literal plus a temporary string.
    std::string name = "t";
    name += std::to_string(l) + "_" + an_.axes[a].name();
    Var t(name);
    if (const std::optional<BorderTiles> border = border_tiles(l, a, r[a])) {
      const int64_t size = *r[a].const_size, n = (size + T - 1) / T;
      auto peeled = [&](int64_t k) {
        std::vector<Region> one = r;
        one[a] = sized(cut(r[a], make_int(k), T), std::min(T, size - k * T));
        open_.push_back({make_int(k), make_int(n), a});
        seq.push_back(level(l, pos + 1, one));
        open_.pop_back();
      };
      for (int64_t k = 0; k < border->lead; ++k) peeled(k);
      if (const int64_t middle = n - border->lead - border->trail; middle > 0) {
        // The tiles between the borders, whose guards hold (proven over
        // the loop's range in holds_over_tile).
        const Expr tile = Expr(t) + border->lead;
        std::vector<Region> inner = r;
        inner[a] = sized(cut(r[a], tile, T), T);
        tile_ranges_[t.get()] = {make_int(0), make_int(middle - 1)};
        open_.push_back({tile, make_int(n), a});
        seq.push_back(make_for(t, make_int(middle), ForKind::Serial, level(l, pos + 1, inner)));
        open_.pop_back();
        tile_ranges_.erase(t.get());
      }
      for (int64_t k = n - border->trail; k < n; ++k) peeled(k);
      return make_seq(seq);
    }
    if (peels_remainder(l, a, r[a], T)) {
      // Full tiles, then the last one with its constant size: the
      // micro-kernel stays unrolled, the last vector narrower.
      const int64_t whole = *r[a].const_size / T;
      std::vector<Region> last = r;
      last[a] = sized(cut(r[a], make_int(whole), T), *r[a].const_size - whole * T);
      r[a] = sized(cut(r[a], t, T), T);
      open_.push_back({t, make_int(whole + 1), a});
      seq.push_back(make_for(t, make_int(whole), ForKind::Serial, level(l, pos + 1, r)));
      open_.back().tile = make_int(whole);
      seq.push_back(level(l, pos + 1, last));
      open_.pop_back();
      return make_seq(seq);
    }
    Expr trips = r[a].const_size ? make_int((*r[a].const_size + T - 1) / T) : ceil_div(r[a].size, T);
    r[a] = cut(r[a], t, T);
    open_.push_back({t, trips, a});
    seq.push_back(make_for(t, trips, ForKind::Serial, level(l, pos + 1, r)));
    open_.pop_back();
    return make_seq(seq);
  }

  // Register tiles along a padded axis that reach the padding, at its two
  // ends, peeled where the tile loop's start is fixed (the tiles around it
  // span the axis) and the taps sliding along the axis are unrolled whole
  // (schedule/state.h, border_tiles): each then sits at a known position,
  // and its guards fold when compiled (a window's taps that read only
  // padding drop out, the others lose their tests), as a library's
  // hand-written kernel handles its left and right borders apart; the tiles
  // between run without guards. In the loop, a border tile ran its guarded
  // copy with a test per tap and element: depthwise 14x14 c384 3x3 in tiles
  // of 2x3 outputs by 48 channels, kw innermost, ran at 127 GFLOP/s so,
  // 140-150 with the column tiles peeled. Along an axis whose taps stay a
  // loop, the tests stay too, and the copies only cost: the same tiles
  // peeled along their rows alone ran at 101.
  std::optional<BorderTiles> border_tiles(int l, int a, const Region& region) const {
    if (!peel_ || !peels_borders_[size_t(a)] || l != reg_ || an_.is_reduce_axis(a) || !region.const_size ||
        !has_guards())
      return std::nullopt;
    const std::optional<int64_t> base = region.base.as_const_int();
    return base ? loom::border_tiles(s_, an_, a, *base, *region.const_size) : std::nullopt;
  }

  // Whether the loop over tiles of T along axis `a` peels its last, shorter
  // tile (a known size T does not divide), where the state's rule says so
  // (StateData::peels_remainder_at; K = 771 in blocks of 32, each in steps
  // of 8, keeps the micro-kernel's trip count constant).
  bool peels_remainder(int l, int a, const Region& region, int64_t T) const {
    if (!region.const_size || *region.const_size <= T || *region.const_size % T == 0) return false;
    return peel_ && s_.peels_remainder_at(an_, l, a);
  }

  // --- packing -------------------------------------------------------
  Stmt pack(int i, const std::vector<Region>& r) {
    const Access& x = an_.accesses[i];
    PackedAccess& p = packed_[i];
    p.enclosing = open_;
    p.terms_before.resize(r.size());
    p.nominal.resize(r.size());
    std::vector<int> used;
    for (int a = 0; a < an_.num_axes(); ++a) {
      if (!x.uses_axis[a]) continue;
      LOOM_INTERNAL_CHECK(r[a].nominal > 0, "packing ", x.tensor.name(), " over an unbounded axis");
      used.push_back(a);
      p.terms_before[a] = r[a].terms.size();
      p.nominal[a] = r[a].nominal;
    }
    // A peeled remainder packs again into the same buffer (same nominal
    // region).
    if (!p.buffer) {
      const Expr elems = halo(i) ? product(halo_dims(i)) : make_int(panel_count(i) * panel_stride(i));
      p.buffer = std::make_shared<BufferNode>(BufferNode{"packed_" + x.tensor.name(), DType::f32(), {elems}});
    }
    if (halo(i)) return fill_halo(i, r);

    // Fill in source order, the axis with the smallest stride innermost (a
    // source streamed from memory is read in long runs), except that the
    // innermost loop writes a register tile's row of the packed buffer
    // (`row`), whole vectors where the source is contiguous along it too.
    // A pack that transposes (the source contiguous along another axis,
    // `line`) reads that axis a cache line at a time: for each line's
    // worth of it, the row's source lines, each used whole at once, into a
    // block of rows that stays in L1. Written across the whole buffer, every
    // element went to another line (a dense layer's weights took a quarter
    // of the kernel's time); a row's lines kept in L1 over the next rows
    // fall out where the source's rows are a multiple of the cache's way
    // apart (3072 floats). Each spatial axis cut into register tiles runs as
    // two loops, over its tiles and within one, so the packed index needs no
    // division.
    std::sort(used.begin(), used.end(), [&](int a, int b) {
      auto sa = x.stride[a].value_or(1 << 30), sb = x.stride[b].value_or(1 << 30);
      return std::abs(sa) > std::abs(sb);
    });
    auto register_tile = [&](int a) { return an_.is_reduce_axis(a) ? int64_t(1) : s_.tile[reg_][a]; };
    int row = -1;
    for (int a : layout_inner(i))
      if (register_tile(a) > 1) row = a;
    const int last = used.empty() ? -1 : used.back();  // the source's smallest stride
    const bool transposes =
        row >= 0 && last >= 0 && last != row && register_tile(last) == 1 && x.stride[size_t(last)] == 1;
    const int line = transposes ? last : -1;
    struct FillLoop {
      Var var;
      Expr extent;
    };
    // Per axis: its loop, or the loop over its pieces and the one within.
    std::vector<std::optional<FillLoop>> outer_loop(an_.num_axes()), inner_loop(an_.num_axes());
    std::vector<Expr> tile_index(an_.num_axes(), make_int(0)), element = tile_index;
    VarMap at;
    // Loops of `size` in pieces of `piece`: over the pieces and within one,
    // the last cut to what is left where `piece` may not divide the size.
    auto split = [&](int a, const std::string& outer, const std::string& inner, int64_t piece) {
      Var o(outer), in(inner);
      const std::optional<int64_t> S = r[a].const_size;
      const bool whole = S ? *S % piece == 0 : r[a].multiple % piece == 0;
      const bool pieces = !S || *S > piece;
      if (pieces) outer_loop[a] = FillLoop{o, ceil_div(r[a].size, piece)};
      const Expr left = min(make_int(piece), r[a].size - o * piece);
      inner_loop[a] = FillLoop{in, whole ? make_int(piece) : S && *S < piece ? make_int(*S) : left};
      return std::pair<Expr, Expr>{pieces ? Expr(o) : make_int(0), in};
    };
    for (int a : used) {
      const std::string name = "v_" + an_.axes[a].name();
      const int64_t R = register_tile(a);
      if (a == line) {
        const auto [o, in] = split(a, name + "_line", name + "_in", line_elems_);
        tile_index[a] = o * line_elems_ + in;
        if (an_.is_reduce_axis(a)) element[a] = tile_index[a];
        at[an_.axes[a].get()] = r[a].base + tile_index[a];
      } else if (R == 1) {
        outer_loop[a] = FillLoop{Var(name), r[a].size};
        tile_index[a] = outer_loop[a]->var;
        if (an_.is_reduce_axis(a)) element[a] = outer_loop[a]->var;
        at[an_.axes[a].get()] = r[a].base + outer_loop[a]->var;
      } else {
        // R per tile where R divides every size the region takes; a known
        // region shorter than R in its one tile; otherwise the last tile is
        // cut to what is left.
        const auto [tile, in] = split(a, name + "_tile", name + "_in", R);
        tile_index[a] = tile;
        element[a] = in;
        at[an_.axes[a].get()] = r[a].base + tile * R + in;
      }
    }
    std::vector<FillLoop> loops;  // outermost first
    for (int a : used) {
      if (outer_loop[a]) loops.push_back(*outer_loop[a]);
      if (inner_loop[a] && a != row && a != line) loops.push_back(*inner_loop[a]);
    }
    if (row >= 0) loops.push_back(*inner_loop[row]);
    if (line >= 0) loops.push_back(*inner_loop[line]);
    Stmt fill = make_store(p.buffer, layout_index(i, tile_index, element), in_.lower_reads(substitute(x.read, at)));
    // The row is a vector loop where the source is contiguous along it too;
    // the other loops stay scalar: left to LLVM, a row of a few vectors is
    // unrolled whole and a loop around it vectorized with gathers or
    // scatters instead (measured on AVX-512: a conv's weights packed 48
    // channels at a time at a fifth of copy speed; a dense layer's
    // transposing pack 0.92x of scalar copies).
    // A transposing pack whose rows are vectors (the packed buffer
    // contiguous along them) copies blocks of a row's vectors by a line's
    // elements through registers (ForKind::Transposed): a vector load per
    // row of the source, a transpose, a vector store per row of the buffer.
    // Scalar copies of a dense layer's weights took 0.7-1.0 ms of a 4-5 ms
    // kernel at M = 80 (Zen 4).
    const int v = s_.vec_axis;
    const bool vector_rows = v >= 0 && v == row && line < 0 && s_.vec_width > 1 && x.stride[size_t(v)] == 1;
    const bool transposed_rows = v >= 0 && v == row && line >= 0 && s_.vec_width > 1 && !layout_vector_reduce(i);
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
      const bool vector = vector_rows && it == loops.rbegin();
      const bool transposed = transposed_rows && it == loops.rbegin() + 1;
      const ForKind kind = vector ? ForKind::Vectorized : transposed ? ForKind::Transposed : ForKind::Scalar;
      fill = make_for(it->var, it->extent, kind, fill, vector || transposed ? s_.vec_width : 1, 0,
                      /*masked_remainder=*/vector);
    }
    return fill;
  }

  bool halo(int i) const { return s_.packs_halo(an_, size_t(i)); }

  // A halo tile holds the window's data tile over the pack's nominal
  // region, in the tensor's own dimensions and order.
  std::vector<Expr> halo_dims(int i) const {
    std::vector<Expr> dims;
    for (const auto& row : an_.accesses[i].dim_terms)
      dims.push_back(make_int(int64_t(Access::dim_extent(row, packed_[i].nominal.data()))));
    return dims;
  }

  // The halo tile's element read at `local` (per axis, the coordinate
  // within the pack's region): the index moves with each axis by its
  // coefficient, from the region's first element.
  Expr halo_index(int i, const std::vector<Expr>& local) const {
    std::vector<Expr> offset;
    for (const auto& row : an_.accesses[i].dim_terms) {
      Expr o = make_int(0);
      for (const Access::Term& t : row) o = o + local[t.axis] * t.coeff;
      offset.push_back(o);
    }
    return flatten_index(offset, halo_dims(i));
  }

  // Copies the region's data tile, cut to the region's actual sizes, in
  // the tensor's order: its last dimension, contiguous in the source and
  // in the copy, runs as a vector loop.
  Stmt fill_halo(int i, const std::vector<Region>& r) {
    const Access& x = an_.accesses[i];
    VarMap first;
    for (int a = 0; a < an_.num_axes(); ++a)
      if (x.uses_axis[a]) first[an_.axes[a].get()] = r[a].base;
    std::vector<Var> vars;
    std::vector<Expr> extents, source;
    for (size_t d = 0; d < x.dim_terms.size(); ++d) {
      std::string name = "v_";  // appended: see level()
      name += x.tensor.name();
      name += "_";
      name += std::to_string(d);
      vars.emplace_back(name);
      Expr extent = make_int(1);
      for (const Access::Term& t : x.dim_terms[d]) extent = extent + (r[t.axis].size - 1) * t.coeff;
      extents.push_back(extent);
      source.push_back(substitute(x.indices[d], first) + vars.back());
    }
    Stmt fill = make_store(packed_[i].buffer, flatten_index({vars.begin(), vars.end()}, halo_dims(i)),
                           in_.lower_reads(x.tensor(source)));
    for (size_t d = vars.size(); d-- > 0;) {
      const bool vector = d + 1 == vars.size() && s_.vec_width > 1;
      fill = make_for(vars[d], extents[d], vector ? ForKind::Vectorized : ForKind::Scalar, fill,
                      vector ? s_.vec_width : 1, 0, /*masked_remainder=*/vector);
    }
    return fill;
  }

  // Packed layout: register-tile index of each spatial axis (register
  // order), then the reduction axes (micro-kernel order), then the element
  // within the register tile (micro-kernel order), then a vectorized
  // reduction axis: contiguous, so that the micro-kernel's vectors along it
  // are loads (before the elements, each vector was a gather with the
  // register tile's stride: a dense layer's packed 2-row block of X ran at
  // a quarter of the unpacked kernel's speed).
  std::vector<int> layout_outer(int i) const {
    std::vector<int> v;
    for (int a : s_.order[reg_])
      if (an_.accesses[i].uses_axis[a]) v.push_back(a);
    return v;
  }
  std::vector<int> layout_reduce(int i) const {
    std::vector<int> v;
    for (int a : reduce_order_)
      if (an_.accesses[i].uses_axis[a] && a != s_.vec_axis) v.push_back(a);
    return v;
  }
  std::vector<int> layout_inner(int i) const {
    std::vector<int> v;
    for (int a : element_order_)
      if (an_.accesses[i].uses_axis[a]) v.push_back(a);
    return v;
  }
  std::optional<int> layout_vector_reduce(int i) const {
    const int v = s_.vec_axis;
    if (v >= 0 && an_.is_reduce_axis(v) && an_.accesses[i].uses_axis[v]) return v;
    return std::nullopt;
  }

  // One register tile's panel: the reduction axes, the elements, a
  // vectorized reduction axis; the panels follow one another in register
  // order.
  std::vector<int64_t> outer_dims(int i) const {
    std::vector<int64_t> d;
    for (int a : layout_outer(i)) d.push_back((packed_[i].nominal[a] + s_.tile[reg_][a] - 1) / s_.tile[reg_][a]);
    return d;
  }
  std::vector<int64_t> panel_dims(int i) const {
    const PackedAccess& p = packed_[i];
    std::vector<int64_t> d;
    for (int a : layout_reduce(i)) d.push_back(p.nominal[a]);
    for (int a : layout_inner(i)) d.push_back(s_.tile[reg_][a]);
    if (const std::optional<int> v = layout_vector_reduce(i)) d.push_back(p.nominal[*v]);
    return d;
  }
  int64_t panel_count(int i) const {
    int64_t n = 1;
    for (int64_t d : outer_dims(i)) n *= d;
    return n;
  }
  // Elements from one panel to the next: the panel's own, and one cache
  // line more where panels a multiple of many lines apart would map the
  // same row of every panel to a few L1 sets, more panels to a set than
  // half its ways. The pack writes a row of each panel in turn, and each
  // write then evicted a line of the panel before it (measured, a loop of
  // 64-byte vector copies: a GEMM's B packed 128 x 32 per panel, 16 KB
  // apart, 16 MB in 1.4 ms; with a line between panels, 0.53 ms).
  int64_t panel_stride(int i) const {
    int64_t elems = 1;
    for (int64_t d : panel_dims(i)) elems *= d;
    if (elems % line_elems_ != 0) return elems;
    const int64_t sets_reached = l1_sets_reached(elems / line_elems_, in_.caches);
    const int64_t panels_per_set = (panel_count(i) + sets_reached - 1) / sets_reached;
    return 2 * panels_per_set > in_.caches.l1_ways ? elems + line_elems_ : elems;
  }

  // `tile_index[a]` / `element[a]`: register-tile index and element of a
  // spatial axis within the packed region; for reduction axes the local
  // coordinate itself (in tile_index).
  Expr layout_index(int i, const std::vector<Expr>& tile_index, const std::vector<Expr>& element) const {
    std::vector<Expr> outer, within;
    for (int a : layout_outer(i)) outer.push_back(tile_index[a]);
    for (int a : layout_reduce(i)) within.push_back(tile_index[a]);
    for (int a : layout_inner(i)) within.push_back(element[a]);
    if (const std::optional<int> v = layout_vector_reduce(i)) within.push_back(tile_index[*v]);
    auto exprs = [](const std::vector<int64_t>& d) {
      std::vector<Expr> e;
      for (int64_t x : d) e.push_back(make_int(x));
      return e;
    };
    return flatten_index(outer, exprs(outer_dims(i))) * make_int(panel_stride(i)) +
           flatten_index(within, exprs(panel_dims(i)));
  }

  // --- micro-kernel --------------------------------------------------
  // Axes whose size in this tile is known (whole tiles, or a peeled
  // remainder) run the fast body at that size. A tile cut short at run time
  // (a symbolic extent, or an enclosing tile that does not divide) keeps
  // the fast body's vector and reduction structure when its vector axis is
  // whole: only the short axes become loops bounded by their actual size.
  // Otherwise (the vector axis itself is short) the scalar body runs.
  Stmt micro_kernel(const std::vector<Region>& r) {
    ++micro_kernels_;
    std::vector<Expr> full, vector_full;
    bool rows_may_be_short = false;
    for (int a = 0; a < an_.num_spatial; ++a) {
      if (r[a].const_size) continue;
      const int64_t R = s_.tile[reg_][a];
      const bool vector_axis = a == s_.vec_axis && s_.vec_width > 1;
      rows_may_be_short |= !vector_axis && R > 1;
      full.push_back(r[a].size == R);
      if (vector_axis) vector_full.push_back(r[a].size == R);
    }
    if (full.empty()) return kernel_body(r, true);
    Stmt partial = kernel_body(r, false);
    if (rows_may_be_short) {
      short_rows_ = true;
      Stmt rows = kernel_body(r, true);
      short_rows_ = false;
      partial = vector_full.empty() ? rows : make_if(and_all(vector_full), rows, partial);
    }
    return make_if(and_all(full), kernel_body(r, true), partial);
  }

  struct Elements {
    std::vector<Expr> e;  // per axis: element offset in the tile
    std::vector<std::tuple<Var, Expr, ForKind, int>> loops;  // outermost first
  };

  // The vectors (elements where scalar) of a register block of tiles `r`
  // whose sizes are known: the accumulators its micro-kernel keeps.
  int64_t block_vectors(const std::vector<Region>& r) const {
    const int W = s_.vec_axis >= 0 ? s_.vec_width : 1;
    int64_t vectors = 1;
    for (int a : element_order_) {
      const int64_t R = s_.tile[reg_][a];
      const int64_t size = r[a].const_size ? std::min(*r[a].const_size, R) : R;
      vectors *= a == s_.vec_axis ? (size + W - 1) / W : size;
    }
    return vectors;
  }

  // Loops over the register tile's elements (fast: unrolled, vector axis
  // split into unrolled vectors; slow: bounded by the actual sizes).
  Elements elements(const std::vector<Region>& r, bool fast) {
    Elements el;
    el.e.assign(an_.num_axes(), make_int(0));
    const int W = s_.vec_width;
    for (int a : element_order_) {
      const int64_t R = s_.tile[reg_][a];
      const std::string name = an_.axes[a].name();
      if (a == s_.vec_axis && W > 1) {
        if (fast) {
          // Unrolled vectors over the tile; the last tile of a vector axis
          // the register tile does not divide ends with a narrower one.
          const int64_t size = r[a].const_size && *r[a].const_size < R ? *r[a].const_size : R;
          const int64_t vectors = (size + W - 1) / W;
          Var vo("e_" + name + "_v"), vi("e_" + name);
          if (vectors > 1) el.loops.emplace_back(vo, make_int(vectors), ForKind::Unrolled, 1);
          Expr base = vectors > 1 ? Expr(vo) * W : make_int(0);
          Expr lanes = size % W == 0 ? make_int(W) : min(make_int(W), size - base);
          el.loops.emplace_back(vi, lanes, ForKind::Vectorized, W);
          ranges_[vo.get()] = {make_int(0), make_int(vectors - 1)};
          ranges_[vi.get()] = {make_int(0), make_int(std::min<int64_t>(W, size) - 1)};
          el.e[a] = vectors > 1 ? base + vi : Expr(vi);
        } else {
          Var v("e_" + name);
          el.loops.emplace_back(v, r[a].size, ForKind::Vectorized, W);
          el.e[a] = v;
        }
        continue;
      }
      // A spatial axis of known size in this tile unrolls to that size.
      const int64_t n = !an_.is_reduce_axis(a) && r[a].const_size ? *r[a].const_size : R;
      if (fast && n == 1) continue;
      Var v("e_" + name);
      const bool bounded = !fast || (short_rows_ && !an_.is_reduce_axis(a) && !r[a].const_size);
      el.loops.emplace_back(v, bounded ? r[a].size : make_int(n), bounded ? ForKind::Serial : ForKind::Unrolled, 1);
      el.e[a] = v;
      ranges_[v.get()] = {make_int(0), bounded ? r[a].size - 1 : make_int(n - 1)};
    }
    return el;
  }

  static Stmt wrap(const Elements& el, Stmt inner) { return wrap_from(el, 0, std::move(inner)); }

  // The element loops from the k-th (outermost first) inward around `inner`.
  static Stmt wrap_from(const Elements& el, size_t k, Stmt inner) {
    for (size_t i = el.loops.size(); i-- > k;) {
      const auto& [var, extent, kind, lanes] = el.loops[i];
      inner = make_for(var, extent, kind, inner, lanes, 0, /*masked_remainder=*/kind == ForKind::Vectorized);
    }
    return inner;
  }

  // `inner` over the elements, run only where `cond` holds: the test sits
  // just inside the innermost loop whose variable it reads. Nullopt when
  // that is a vector loop (its lanes would need a mask, not a branch).
  static std::optional<Stmt> wrap_where(const Elements& el, const Expr& cond, Stmt inner) {
    size_t k = 0;
    for (size_t i = 0; i < el.loops.size(); ++i)
      if (uses_var(cond, std::get<0>(el.loops[i]).get())) k = i + 1;
    if (k > 0 && std::get<2>(el.loops[k - 1]) == ForKind::Vectorized) return std::nullopt;
    Stmt guarded = make_if(cond, wrap_from(el, k, std::move(inner)));
    Elements outer{el.e, {el.loops.begin(), el.loops.begin() + std::ptrdiff_t(k)}};
    return wrap(outer, guarded);
  }

  // The anchor's source at element `e`, packed accesses read from their
  // buffers.
  Expr source_at(const std::vector<Region>& r, const std::vector<Expr>& e) const {
    Expr value = raw_source_at(r, e);
    if (!interior_conds_) return value;
    // Interior version: guards provably true over the tile are dropped and
    // their proofs collected; unprovable guards stay.
    return transform(value, [&](const Expr& x) -> std::optional<Expr> {
      auto* sel = x.get()->as<SelectNode>();
      if (!sel) return std::nullopt;
      std::optional<Expr> holds = holds_over_tile(sel->cond);
      if (!holds) return std::nullopt;
      interior_conds_->push_back(*holds);
      return sel->then_value;
    });
  }

  // A runtime condition, free of micro-kernel loop variables, implying that
  // `cond` is true for every value of those variables in their ranges.
  std::optional<Expr> holds_over_tile(const Expr& cond) const {
    if (auto* b = cond.get()->as<BinaryNode>(); b && b->op == BinaryOp::And) {
      auto x = holds_over_tile(b->a), y = holds_over_tile(b->b);
      if (!x || !y) return std::nullopt;
      return *x && *y;
    }
    auto* c = cond.get()->as<CompareNode>();
    if (!c || !c->a.dtype().is_int()) return std::nullopt;
    Expr d = c->a - c->b;
    VarMap zero;
    std::vector<std::pair<int64_t, const std::pair<Expr, Expr>*>> terms;
    for (const auto* vars : {&ranges_, &tile_ranges_})
      for (const auto& [var, range] : *vars) {
        auto k = linear_coeff(d, var);
        if (!k) return std::nullopt;
        if (*k == 0) continue;
        zero[var] = make_int(0);
        terms.emplace_back(*k, &range);
      }
    Expr d0 = substitute(d, zero);
    Expr lo = d0, hi = d0;
    for (auto& [k, range] : terms) {
      lo = lo + (k > 0 ? k * range->first : k * range->second);
      hi = hi + (k > 0 ? k * range->second : k * range->first);
    }
    switch (c->op) {
      case CompareOp::GE: return lo >= 0;
      case CompareOp::GT: return lo > 0;
      case CompareOp::LE: return hi <= 0;
      case CompareOp::LT: return hi < 0;
      default: return std::nullopt;
    }
  }

  Expr raw_source_at(const std::vector<Region>& r, const std::vector<Expr>& e) const {
    Expr src = transform(an_.source, [&](const Expr& x) -> std::optional<Expr> {
      for (size_t i = 0; i < an_.accesses.size(); ++i) {
        if (x.get() != an_.accesses[i].read.get() || !packed_[i].buffer) continue;
        std::vector<Expr> tile_index(an_.num_axes(), make_int(0)), element = tile_index, local = tile_index;
        for (int a = 0; a < an_.num_axes(); ++a) {
          if (!an_.accesses[i].uses_axis[a]) continue;
          const bool spatial_split = !an_.is_reduce_axis(a);
          const int64_t R = spatial_split ? s_.tile[reg_][a] : 1;
          Expr t = make_int(0);
          for (size_t k = packed_[i].terms_before[a]; k < r[a].terms.size(); ++k)
            t = t + r[a].terms[k].first * (r[a].terms[k].second / R);
          local[a] = t * R + e[a];
          if (spatial_split) {
            tile_index[a] = t;
            element[a] = e[a];
          } else {
            tile_index[a] = t + e[a];
          }
        }
        if (halo(int(i))) return make_load(packed_[i].buffer, halo_index(int(i), local));
        return make_load(packed_[i].buffer, layout_index(int(i), tile_index, element));
      }
      return std::nullopt;
    });
    VarMap at;
    for (int a = 0; a < an_.num_axes(); ++a) at[an_.axes[a].get()] = r[a].base + e[a];
    return in_.lower_reads(substitute(src, at));
  }

  // The fast path, split into an interior version (guards proven true for
  // the whole tile, e.g. no padding reached) and the guarded one.
  Stmt kernel_body(const std::vector<Region>& r, bool fast) {
    ranges_.clear();
    const bool vector_reduction = s_.vec_axis >= an_.num_spatial;  // its lane loops are not ranged
    if (!fast || !has_guards() || vector_reduction) return kernel_core(r, fast);
    std::vector<Expr> conds;
    interior_conds_ = &conds;
    Stmt interior = kernel_core(r, fast);
    interior_conds_ = nullptr;
    const std::optional<Expr> when = runtime_condition(conds);
    if (when && !when->defined()) return interior;
    ranges_.clear();
    Stmt guarded = kernel_core(r, fast);
    return when ? make_if(*when, interior, guarded) : guarded;
  }

  // The conjunction of `conds` left to test at run time: undefined when all
  // of them are known to hold, nullopt when one is known to fail (a tile at
  // a known position: a peeled border tile, or one spanning its axis).
  static std::optional<Expr> runtime_condition(const std::vector<Expr>& conds) {
    std::vector<Expr> unknown;
    for (const Expr& c : conds) {
      const std::optional<bool> known = known_truth(c);
      if (known && !*known) return std::nullopt;
      if (!known) unknown.push_back(c);
    }
    return and_all(unique_exprs(unknown));
  }

  static std::vector<Expr> unique_exprs(const std::vector<Expr>& conds) {
    std::vector<Expr> unique;
    for (const Expr& c : conds) {
      bool seen = false;
      for (const Expr& u : unique) seen |= u.str() == c.str();
      if (!seen) unique.push_back(c);
    }
    return unique;
  }

  // The value of a comparison of two constants, or of a conjunction of such.
  static std::optional<bool> known_truth(const Expr& cond) {
    if (auto* b = cond.get()->as<BinaryNode>(); b && b->op == BinaryOp::And) {
      const std::optional<bool> x = known_truth(b->a), y = known_truth(b->b);
      if ((x && !*x) || (y && !*y)) return false;
      if (x && y) return true;
      return std::nullopt;
    }
    auto* c = cond.get()->as<CompareNode>();
    const std::optional<int64_t> x = c ? c->a.as_const_int() : std::nullopt, y = c ? c->b.as_const_int() : std::nullopt;
    if (!x || !y) return std::nullopt;
    return apply_compare(c->op, *x, *y);
  }

  // A step of the reduction that reads only padding for an element adds
  // nothing to it (a convolution's border taps). Where the padded data is
  // read from a buffer that holds its padding (packed or materialized), the
  // micro-kernel skips such steps instead of multiplying zeros, as a
  // library's hand-written kernel does: at the 7 x 7 outputs of a 3 x 3
  // convolution padded by 1, 18% of the steps. A test whose terms are all
  // known once the tap loops and the tile's elements are unrolled (the
  // tile's position fixed: a tile spanning its axis, a peeled remainder)
  // drops the step per element, and those tap loops are unrolled so that
  // it folds away. A test that depends on the tile's position at run time
  // skips a tap for the whole tile, where no element of it reads inside.
  struct PaddingSkips {
    explicit PaddingSkips(size_t taps) : per_tap(taps), unrolled(taps, false) {}
    Expr per_element;            // undefined: none
    std::vector<Expr> per_tap;   // per reduce_order_ entry, undefined: none
    std::vector<bool> unrolled;  // per reduce_order_ entry
  };

  PaddingSkips padding_skips(const std::vector<Region>& r, const std::vector<Expr>& e, const std::vector<Var>& rvars,
                             const Elements& el) const {
    PaddingSkips skips(rvars.size());
    if (an_.padding.empty() || has_guards()) return skips;
    VarMap at, zero;
    for (int a = 0; a < an_.num_axes(); ++a) at[an_.axes[a].get()] = r[a].base + e[a];
    for (const auto& entry : ranges_) zero[entry.first] = make_int(0);
    auto tap_of = [&](const ExprNode* v) -> std::optional<size_t> {
      for (size_t t = 0; t < rvars.size(); ++t)
        if (rvars[t].get() == v) return t;
      return std::nullopt;
    };
    auto conjoin = [](Expr& all, const Expr& c) { all = all.defined() ? all && c : c; };
    auto reads_elements = [&](const Expr& x, bool unrolled_ones) {
      for (const auto& [var, extent, kind, lanes] : el.loops)
        if (uses_var(x, var.get()) && (unrolled_ones || kind != ForKind::Unrolled)) return true;
      return false;
    };
    int64_t copies = 1;
    for (const PaddingBound& p : an_.padding) {
      // d op 0, affine in the micro-kernel's variables.
      const Expr d = substitute(p.value, at);
      std::vector<size_t> taps;
      bool affine = true;
      for (const auto& [var, range] : ranges_) {
        const std::optional<int64_t> k = linear_coeff(d, var);
        affine &= k.has_value();
        if (k && *k != 0 && tap_of(var)) taps.push_back(*tap_of(var));
      }
      if (!affine || taps.empty()) continue;
      // Per element: the rest of the test is constant, its elements unrolled, its taps unrollable.
      bool known = substitute(d, zero).as_const_int().has_value() && !reads_elements(d, false);
      int64_t more = 1;
      for (size_t t : taps) {
        const std::optional<int64_t> n = r[reduce_order_[t]].size.as_const_int();
        known &= n.has_value();
        if (n && !skips.unrolled[t]) more *= *n;
      }
      if (known && copies * more <= StateData::kMaxUnrolledTapCopies) {
        copies *= more;
        for (size_t t : taps) skips.unrolled[t] = true;
        conjoin(skips.per_element, make_compare(p.op, d, make_int(0)));
        continue;
      }
      if (taps.size() != 1) continue;
      // Per tap: the test at the element of the tile that comes closest to passing it.
      const bool above = p.op == CompareOp::GE || p.op == CompareOp::GT;
      VarMap extreme;
      for (const auto& [var, range] : ranges_)
        if (!tap_of(var)) extreme[var] = (*linear_coeff(d, var) > 0) == above ? range.second : range.first;
      const Expr some = make_compare(p.op, substitute(d, extreme), make_int(0));
      if (!reads_elements(some, true)) conjoin(skips.per_tap[taps[0]], some);  // it sits outside their loops
    }
    return skips;
  }

  bool has_guards() const {
    for (size_t i = 0; i < an_.accesses.size(); ++i)
      if (s_.reads_through_guard(an_, i) && !packed_[i].buffer) return true;
    return false;
  }

  Stmt kernel_core(const std::vector<Region>& r, bool fast) {
    Elements el = elements(r, fast);
    std::vector<Expr> coords;
    for (int a = 0; a < an_.num_spatial; ++a) coords.push_back(r[a].base + el.e[a]);
    Expr out_index = flatten_index(coords, std::vector<Expr>(an_.extents.begin(), an_.extents.begin() + an_.num_spatial));

    if (!an_.is_reduction) return wrap(el, make_store(in_.out, out_index, source_at(r, el.e)));

    // Conditions on the reduction blocks this micro-kernel covers.
    std::vector<Expr> first_c, last_c;
    for (int a = an_.num_spatial; a < an_.num_axes(); ++a) {
      if (r[a].terms.empty()) continue;
      first_c.push_back(r[a].base == 0);
      last_c.push_back(r[a].base + r[a].size == an_.extents[a]);
    }
    Expr first = and_all(first_c), last = and_all(last_c);

    const int rv = s_.vec_axis >= 0 && an_.is_reduce_axis(s_.vec_axis) ? s_.vec_axis : -1;
    const int64_t RL = rv >= 0 ? s_.tile[reg_][rv] : 1;
    int64_t acc_size = RL;
    for (int a : element_order_) acc_size *= s_.tile[reg_][a];
    // The loop unrolled is the innermost that runs more than once, as the
    // model assumes (unrolled_reduction): a loop of one trip inside it
    // would take the unroll and leave a few taps' loop rolled.
    int unrolled = int(reduce_order_.size()) - 1;
    while (unrolled > 0 && r[reduce_order_[unrolled]].size.as_const_int() == int64_t(1)) --unrolled;
    const int unrolled_axis = reduce_order_[size_t(unrolled)];
    int64_t copies = fast ? accumulator_copies(s_, an_, block_vectors(r), in_.caches.fma_chains,
                                               in_.caches.vector_registers)
                          : 1;
    if (r[unrolled_axis].const_size.value_or(0) < copies) copies = 1;
    // Along a spatial vector axis the register tile is whole vectors, and a
    // partial vector's dead lanes lie past the axis's end.
    auto acc =
        std::make_shared<BufferNode>(BufferNode{"acc", an_.stage.dtype(), {make_int(acc_size * copies)}, rv < 0});
    auto acc_index = [&](const Expr& lane, const Expr& copy = make_int(0)) {
      Expr flat = make_int(0);
      for (int a : element_order_) flat = flat * s_.tile[reg_][a] + el.e[a];
      return flat * RL + lane + copy * acc_size;
    };
    const ReduceOp op = an_.reduce_op;
    const DType type = an_.stage.dtype();
    auto combine = [&](const Expr& x, const Expr& y) { return reduce_combine(op, x, y); };
    const Expr identity = reduce_identity(op, type);

    // init
    Stmt init;
    if (rv >= 0) {
      Var q("q");
      init = make_for(q, make_int(acc_size), ForKind::Serial, make_store(acc, q, identity));
    } else {
      Expr start = first.defined() ? select(first, identity, make_load(in_.out, out_index)) : identity;
      init = wrap(el, make_store(acc, acc_index(make_int(0)), start));
      for (int64_t c = 1; c < copies; ++c)
        init = make_seq({init, wrap(el, make_store(acc, acc_index(make_int(0), make_int(c)), identity))});
    }

    // reduction loops, outer-product form inside
    std::vector<Expr> e = el.e;
    std::vector<Var> rvars;
    for (int a : reduce_order_) {
      rvars.emplace_back("e_" + an_.axes[a].name());
      e[a] = rvars.back();
      ranges_[rvars.back().get()] = {make_int(0), r[a].size - 1};
    }
    auto combine_into = [&](const Expr& lane, const Expr& value, const Expr& copy = make_int(0)) {
      return make_store(acc, acc_index(lane, copy), combine(make_load(acc, acc_index(lane, copy)), value));
    };
    auto accumulate = [&](const Expr& lane, const std::vector<Expr>& at, const Expr& copy = make_int(0)) {
      return combine_into(lane, source_at(r, at), copy);
    };
    Stmt update;
    PaddingSkips skips(rvars.size());
    if (rv < 0 && fast && !interior_conds_ && has_guards()) {
      // The guarded version still proves guards per reduction step: with
      // the reduction variables fixed, the tile's elements often all lie
      // inside (every window offset but the edge ones).
      for (const Var& v : rvars) ranges_.erase(v.get());
      std::vector<Expr> conds;
      interior_conds_ = &conds;
      Stmt inside = wrap(el, accumulate(make_int(0), e));
      interior_conds_ = nullptr;
      // A step that reads only padding for an element adds nothing to it:
      // the element skips the step rather than combining the identity.
      std::optional<Stmt> guarded;
      if (auto kept = identity_unless(source_at(r, e), op, identity))
        guarded = wrap_where(el, kept->first, combine_into(make_int(0), kept->second));
      if (!guarded) guarded = wrap(el, accumulate(make_int(0), e));
      const std::optional<Expr> when = runtime_condition(conds);
      update = conds.empty() || !when ? *guarded : !when->defined() ? inside : make_if(*when, inside, *guarded);
    } else if (rv >= 0 && fast) {
      // Lane-wise partial sums over blocks of RL, then the remainder in lane 0.
      const int W = s_.vec_width;
      Var b("b_" + an_.axes[rv].name()), lo("l_o"), li("l_i"), u("u_" + an_.axes[rv].name());
      Expr lane = RL / W > 1 ? Expr(lo) * W + li : Expr(li);
      e[rv] = Expr(b) * RL + lane;
      Stmt step = make_for(li, make_int(W), ForKind::Vectorized, accumulate(lane, e), W);
      if (RL / W > 1) step = make_for(lo, make_int(RL / W), ForKind::Unrolled, step);
      Stmt blocks = make_for(b, r[rv].size / RL, ForKind::Serial, wrap(el, step), 1, s_.unroll);
      Expr done = r[rv].size / RL * RL;
      e[rv] = done + u;
      Stmt rest = make_for(u, r[rv].size - done, ForKind::Serial, wrap(el, accumulate(make_int(0), e)));
      update = make_seq({blocks, rest});
    } else {
      skips = padding_skips(r, e, rvars, el);
      std::optional<Stmt> kept;
      if (skips.per_element.defined()) kept = wrap_where(el, skips.per_element, accumulate(make_int(0), e));
      update = kept ? *kept : wrap(el, accumulate(make_int(0), e));
    }
    // Copies of the accumulators (accumulator_copies): step k of the
    // unrolled loop into copy k mod copies, the reduction loops inside it (of
    // one trip) at their only step. The rule allows them only where the
    // update is the plain one above (no guards, no reduction along the
    // vector).
    auto split_steps = [&](bool hinted) {
      const int64_t n = *r[unrolled_axis].const_size;
      const std::string name = an_.axes[unrolled_axis].name();
      Var outer("e_" + name + "_o"), copy("c_" + name), tail("e_" + name + "_t");
      ranges_[outer.get()] = {make_int(0), make_int(n / copies - 1)};
      ranges_[copy.get()] = {make_int(0), make_int(copies - 1)};
      ranges_[tail.get()] = {make_int(0), make_int(std::max<int64_t>(0, n % copies - 1))};
      auto step = [&](const Expr& position, const Expr& into) {
        std::vector<Expr> at = e;
        for (size_t k = size_t(unrolled) + 1; k < reduce_order_.size(); ++k) at[reduce_order_[k]] = make_int(0);
        at[unrolled_axis] = position;
        Stmt body = wrap(el, accumulate(make_int(0), at, into));
        const Stmt hints = hinted ? prefetches(r, at, unrolled_axis).hints : nullptr;
        return hints ? make_seq({hints, body}) : body;
      };
      Stmt copy_steps = make_for(copy, make_int(copies), ForKind::Unrolled, step(Expr(outer) * copies + copy, copy));
      Stmt steps = make_for(outer, make_int(n / copies), ForKind::Serial, copy_steps, 1,
                            int(std::max<int64_t>(1, s_.unroll / copies)));
      if (n % copies == 0) return steps;
      return make_seq({steps, make_for(tail, make_int(n % copies), ForKind::Serial,
                                       step(n / copies * copies + Expr(tail), make_int(0)))});
    };
    auto reduction_loops = [&](Stmt body, const Stmt& ahead) {
      for (int k = int(reduce_order_.size()) - 1; k >= 0; --k) {
        const int a = reduce_order_[k];
        if (a == rv && fast) continue;
        const bool innermost = k == unrolled;
        if (copies > 1 && k >= unrolled) {
          if (innermost) body = split_steps(ahead != nullptr);
          continue;
        }
        // A window's few taps are unrolled whole whatever the factor (StateData::unroll).
        const std::optional<int64_t> taps = r[a].size.as_const_int();
        const int whole = taps && *taps <= StateData::kWholeUnrollTrips ? int(*taps) : 0;
        if (skips.per_tap[size_t(k)].defined()) body = make_if(skips.per_tap[size_t(k)], body);
        if (innermost && ahead) body = make_seq({ahead, body});
        const ForKind kind = skips.unrolled[size_t(k)] ? ForKind::Unrolled : ForKind::Serial;
        body = make_for(rvars[k], r[a].size, kind, body, 1, innermost ? std::max(s_.unroll, whole) : 0);
      }
      return body;
    };
    const Prefetches ahead = rv < 0 ? prefetches(r, e, unrolled_axis) : Prefetches{};
    if (!ahead.hints || !ahead.first_pass.defined()) update = reduction_loops(update, ahead.hints);
    else update = make_if(ahead.first_pass, reduction_loops(update, ahead.hints), reduction_loops(update, nullptr));

    // write-back, the copies summed into the first
    for (int64_t c = 1; c < copies; ++c) {
      const Expr partial = make_load(acc, acc_index(make_int(0), make_int(c)));
      update = make_seq({update, wrap(el, combine_into(make_int(0), partial))});
    }
    Expr value = make_load(acc, acc_index(make_int(0)));
    if (rv >= 0 && first.defined()) value = select(first, value, combine(make_load(in_.out, out_index), value));
    auto write_back = [&](const Expr& v) {
      Stmt write = make_store(in_.out, out_index, v);
      if (rv >= 0 && fast) write = make_seq({fold_lanes(acc, acc_index, RL), write});
      return wrap(el, write);
    };
    Stmt writes = write_back(value);
    if (in_.epilogue) {
      // On the last reduction block only: one branch per call (its blocks are the same for all its elements),
      // where a select per element would compute the epilogue for every block and drop it.
      Stmt final_writes = write_back(in_.epilogue(value, coords));
      writes = last.defined() ? make_if(last, final_writes, writes) : final_writes;
    }
    return make_allocate(acc, make_seq({init, update, writes}), MemScope::Stack);
  }

  // Hints asking for an operand's lines some steps of the reduction ahead
  // (see the header; which operands, how far: schedule/prefetch_hints.h).
  // Each pass over the operand's tile but the first (the loops over axes it
  // does not use) reads it again from L2, where the hints only crowd L1's
  // sets (matmul 512^3, B read in place by 14x32 tiles, 37 passes: 1.27 ms
  // without hints, 1.44-1.57 with them on every pass), unless the
  // micro-kernel reads faster than L2 delivers (HintReach::every_pass).
  // The first pass, from beyond L2, is hinted however many passes follow:
  // unhinted, it waits on every row (matmul 37x1000x4096, 8x48 tiles, 5
  // passes over B's 512-row panels: 3.9-4.0 ms unhinted, 3.1-3.2 hinted).
  // The reduction loops are then built twice, with hints for the first pass
  // and without for the rest (a branch around the hints in the loop instead
  // cost more than they gained).
  struct Prefetches {
    Stmt hints;       // null: none
    Expr first_pass;  // undefined: every pass is a first one
  };
  Prefetches prefetches(const std::vector<Region>& r, std::vector<Expr> e, int axis) const {
    const int v = s_.vec_axis;
    const std::optional<int64_t> trips = r[size_t(axis)].const_size;
    if (v < 0 || an_.is_reduce_axis(v) || s_.vec_width == 1 || !trips) return {};
    const int64_t run = r[v].const_size ? std::min(*r[v].const_size, s_.tile[reg_][v]) : s_.tile[reg_][v];
    // The hints sit in the body of the loop over `axis`, outside the element
    // loops and the one-trip reduction loops inside it: they read the tile's
    // first element, at those loops' only step.
    for (int a : element_order_) e[a] = make_int(0);
    for (auto it = std::find(reduce_order_.begin(), reduce_order_.end(), axis); it != reduce_order_.end(); ++it)
      if (*it != axis) e[*it] = make_int(0);
    std::vector<Stmt> hints;
    std::vector<Expr> first_passes;
    for (size_t i = 0; i < an_.accesses.size(); ++i) {
      if (next_pack_hints(i, r, e, axis, run, hints, first_passes)) continue;
      if (packed_[i].buffer) continue;
      const std::optional<int64_t> stride = gapped_row_stride(s_, an_, an_.accesses[i], axis, run, line_elems_);
      if (!stride) continue;
      const HintReach reach = hint_reach(*stride, run, step_vector_fmas(s_, run), *trips, in_.caches);
      if (!reach.l1_rows) continue;
      const int64_t passes = reach.every_pass ? 1 : passes_over(an_.accesses[i]);
      std::vector<Expr> first_pass;  // the loops over axes the access does not use at their first tile
      bool later_pass = false;        // a peeled tile past the first
      for (int a = 0; a < an_.num_axes() && passes > 1; ++a)
        if (!an_.accesses[i].uses_axis[size_t(a)])
          for (const auto& term : r[a].terms) {
            const std::optional<int64_t> tile = term.first.as_const_int();
            if (!tile) first_pass.push_back(term.first == 0);
            later_pass |= tile.value_or(0) != 0;
          }
      if (later_pass) continue;
      // The run `ahead` steps on: into L1 a few rows ahead, into L2 further.
      auto read_ahead = [&](int64_t ahead) {
        VarMap at;
        for (int a = 0; a < an_.num_axes(); ++a) at[an_.axes[a].get()] = r[a].base + (a == axis ? e[a] + ahead : e[a]);
        return in_.lower_reads(substitute(an_.accesses[i].read, at));
      };
      const Expr near = read_ahead(reach.l1_rows);
      const auto* load = near.get()->as<LoadNode>();
      if (!load) continue;
      hint_run(*load, run, 1, hints);
      if (reach.l2_rows) {
        const Expr later = read_ahead(reach.l2_rows);
        if (const auto* far_load = later.get()->as<LoadNode>()) hint_run(*far_load, run, 2, hints);
      }
      first_passes.insert(first_passes.end(), first_pass.begin(), first_pass.end());
    }
    if (hints.empty()) return {};
    return {make_seq(hints), and_all(unique_exprs(first_passes))};
  }

  // Hints into cache level `cache` for the lines of a run of `run` elements
  // from `load`'s on: one per line, and one at its last element (a run off a
  // line's start).
  void hint_run(const LoadNode& load, int64_t run, int cache, std::vector<Stmt>& hints) const {
    for (int64_t l = 0; l * line_elems_ < run; ++l)
      hints.push_back(make_prefetch(load.buffer, load.index + l * line_elems_, cache));
    hints.push_back(make_prefetch(load.buffer, load.index + (run - 1), cache));
  }

  // Hints asking L2 for the source of packed access i's next pack region
  // (the region the pack copies at the next iteration of the loops around
  // it), spread over the first pass of the micro-kernels that read the
  // current one: at each reduction step, the lines of that step's run in the
  // next region. Only for an operand that does not stay in L2 between calls,
  // packed in regions two of which fit in half of it.
  bool next_pack_hints(size_t i, const std::vector<Region>& r, const std::vector<Expr>& e, int axis, int64_t run,
                       std::vector<Stmt>& hints, std::vector<Expr>& first_pass) const {
    const Access& x = an_.accesses[i];
    const PackedAccess& p = packed_[i];
    const int64_t l2 = in_.caches.l2_bytes;
    if (!p.buffer || p.enclosing.empty() || !x.uses_axis[size_t(axis)]) return false;
    const std::optional<int64_t> region = product(p.buffer->shape).as_const_int();
    // Symbolic sizes count as large.
    const double operand = x.const_bytes().value_or(std::numeric_limits<double>::infinity());
    if (!region || !hints_next_pack_region(s_, an_, i, operand, double(*region), l2)) return false;
    // The loops around the pack at their next iteration, the innermost
    // first, each carried into when those inside it wrap around.
    VarMap next;
    Expr carry;
    for (auto it = p.enclosing.rbegin(); it != p.enclosing.rend(); ++it) {
      const auto* var = it->tile.get()->as<VarNode>();
      if (!var) return false;  // a peeled last tile: its successor is the first tile of an outer loop
      const Expr wraps = it->tile + 1 == it->count;
      const Expr moved = select(wraps, make_int(0), it->tile + 1);
      next[var] = carry.defined() ? select(carry, moved, it->tile) : moved;
      carry = carry.defined() ? (carry && wraps) : wraps;
    }
    // The first pass: the loops inside the pack over axes the access does not use, at their first tile.
    std::vector<Expr> first;
    for (size_t k = p.enclosing.size(); k < open_.size(); ++k) {
      if (x.uses_axis[size_t(open_[k].axis)]) continue;
      const std::optional<int64_t> tile = open_[k].tile.as_const_int();
      if (tile && *tile != 0) return false;
      if (!tile) first.push_back(open_[k].tile == 0);
    }
    VarMap at;
    for (int a = 0; a < an_.num_axes(); ++a) at[an_.axes[a].get()] = substitute(r[a].base, next) + e[a];
    const Expr read = in_.lower_reads(substitute(x.read, at));
    const auto* load = read.get()->as<LoadNode>();
    if (!load) return false;
    hint_run(*load, run, 2, hints);
    first_pass.insert(first_pass.end(), first.begin(), first.end());
    return true;
  }

  // How many register tiles of one parallel tile read the same tile of
  // access `x`: the product, over the axes it does not use, of their tiles.
  int64_t passes_over(const Access& x) const {
    int64_t passes = 1;
    for (int a = 0; a < an_.num_axes(); ++a) {
      if (x.uses_axis[size_t(a)]) continue;
      const int64_t span = std::min(s_.tile[0][a], const_of(an_.extents[a]).value_or(s_.tile[0][a]));
      passes *= (span + s_.tile[reg_][a] - 1) / s_.tile[reg_][a];
    }
    return passes;
  }

  // A vectorized reduction's RL partial results, folded into lane 0 in
  // halves: the upper half combined into the lower as one vector, until one
  // lane is left (log2(RL) vector steps, the horizontal sum the model
  // charges; lane after lane, a 16-lane sum was 15 dependent scalar adds and
  // 15 extracts per output element, and a 24-accumulator dot-product tile
  // ran at half its FMA rate).
  template <typename Index>
  Stmt fold_lanes(const BufferRef& acc, const Index& acc_index, int64_t RL) const {
    std::vector<Stmt> halves;
    const ReduceOp op = an_.reduce_op;
    for (int64_t live = RL; live > 1;) {
      const int64_t upper = live / 2, lower = live - upper;
      Var l("l_fold");
      const Expr into = acc_index(Expr(l));
      Stmt step = make_store(acc, into, reduce_combine(op, make_load(acc, into), make_load(acc, acc_index(l + lower))));
      const int lanes = int(std::min<int64_t>(upper, s_.vec_width));
      halves.push_back(make_for(l, make_int(upper), lanes > 1 ? ForKind::Vectorized : ForKind::Unrolled, step, lanes));
      live = lower;
    }
    return make_seq(halves);
  }

  const TiledNestInputs& in_;
  const AnchorInfo& an_;
  const StateData& s_;
  const int reg_;
  const int64_t line_elems_;  // f32 elements per L1 cache line
  std::vector<PackedAccess> packed_;
  std::vector<OpenLoop> open_;  // the loops around the point being built, outermost first
  std::vector<int> reduce_order_;
  std::vector<int> element_order_;
  // Loop variables of the micro-kernel being built and their ranges
  // [lo, hi], for proving guards true over a whole register tile.
  std::unordered_map<const ExprNode*, std::pair<Expr, Expr>> ranges_;
  std::vector<Expr>* interior_conds_ = nullptr;  // set while building the interior version
  bool short_rows_ = false;  // building the fast body for a tile cut short on non-vector spatial axes
  bool peel_ = true;         // peel remainders of known size (see level())
  std::vector<bool> peels_borders_;  // per axis: peel register tiles reaching the padding (see border_tiles())
  // Tile loops between peeled borders and their ranges, for the same proofs.
  std::unordered_map<const ExprNode*, std::pair<Expr, Expr>> tile_ranges_;
  int micro_kernels_ = 0;    // copies of the micro-kernel in the nest built last
};

}  // namespace

Stmt lower_tiled_nest(const TiledNestInputs& in) { return TiledNest(in).build(); }

}  // namespace loom
