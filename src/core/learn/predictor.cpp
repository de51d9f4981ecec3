#include "core/learn/predictor.h"

#include "core/learn/loop_seed.h"

#include <algorithm>
#include <bit>

namespace uvmp {
namespace {

// A launch's words go through the hash one after another, so each step on the
// running hash is one multiply; the words themselves are formed off that chain.
uint64_t combine(uint64_t h, uint64_t word) { return (std::rotl(h, 5) ^ word) * 0x9e3779b97f4a7c15ull; }

// splitmix64's finaliser, once a launch: signatures are also hash-table keys.
uint64_t finish(uint64_t h) {
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

} // namespace

Predictor::Predictor(PredictorConfig config) : config_(config) {
    config_.context_length = std::max<uint32_t>(config_.context_length, 1);
    config_.max_candidates = std::max<uint32_t>(config_.max_candidates, 1);
    recent_.assign(config_.context_length, 0);
}

uint64_t Predictor::signature_of(uint32_t kernel_id, std::span<const trace::Access> accesses) {
    uint64_t h = combine(0, kernel_id);
    for (const trace::Access& a : accesses) h = combine(combine(h, a.alloc_id), a.offset);
    return finish(h);
}

uint64_t Predictor::extent_hash_of(uint64_t signature, std::span<const trace::Access> accesses) {
    uint64_t h = signature;
    for (const trace::Access& a : accesses) h = combine(h, a.length);
    return finish(h);
}

uint64_t Predictor::next_position(uint64_t position) const {
    if (!frozen_) return position + 1;
    return position + 1 < steps_.size() ? position + 1 : (position + 1) % steps_.size();
}

bool Predictor::has_next(uint64_t position) const {
    return frozen_ ? !steps_.empty() : position + 1 < steps_.size();
}

uint32_t Predictor::recent_kernel(uint64_t back) const {
    return recent_[(recent_count_ - 1 - back) % recent_.size()];
}

bool Predictor::observe(uint32_t kernel_id, std::span<const trace::Access> accesses, const StateOf& state_of) {
    const uint64_t signature = signature_of(kernel_id, accesses);
    bool hit = false;
    if (located_ && has_next(position_)) {
        ++predictions_;
        const Step& expected = steps_[next_position(position_)];
        hit = expected.kernel_id == kernel_id &&
              (expected.signature == signature || resembles(expected, accesses, state_of));
        if (hit && state_of && (expected.signature != signature || stand_in_count_ != 0))
            note_stand_ins(expected, accesses, state_of);
    }
    if (hit) {
        ++hits_;
        position_ = next_position(position_);
        ++consecutive_hits_;
    } else {
        resync(kernel_id, signature);
        consecutive_hits_ = 0;
        if (located_) ++resyncs_;
        // A launch the loop has never seen: the program left the learned loop.
        // Back in a loop it ran before, or else learning again, starting from
        // what the loop knew.
        if (frozen_ && !located_ && !switch_to_kept_loop(kernel_id, signature)) unfreeze();
    }
    continued_ = hit;
    if (!frozen_ && learning_) {
        append(kernel_id, signature, accesses);
        if (hit) maybe_freeze();
    }
    recent_[recent_count_ % recent_.size()] = kernel_id;
    ++recent_count_;
    return hit;
}

bool Predictor::trusted() const {
    if (!located_) return false;
    // The loop's length: frozen, the loop itself; learning, how far back the
    // live launch's match lies in the history.
    const uint64_t period = frozen_ ? steps_.size() : steps_.size() - 1 - position_;
    return consecutive_hits_ >= std::min<uint64_t>(config_.trust_hits, std::max<uint64_t>(period, 1));
}

const Predictor::Step* Predictor::predict(uint64_t ahead) const {
    if (!located_ || steps_.empty()) return nullptr;
    if (frozen_) {
        // Mostly less than a loop ahead: a division only past that.
        uint64_t index = position_ + ahead;
        if (index >= steps_.size()) index -= steps_.size();
        if (index >= steps_.size()) index %= steps_.size();
        return &steps_[index];
    }
    const uint64_t index = position_ + ahead;
    return index < steps_.size() ? &steps_[index] : nullptr;
}

std::span<const trace::Access> Predictor::accesses(const Step& step) const {
    return {step_accesses_.data() + step.first_access, step.access_count};
}

std::span<const trace::Access> Predictor::expected_accesses(const Step& step, uint64_t ahead,
                                                             std::vector<trace::Access>& scratch, uint64_t& key) const {
    const auto learned = accesses(step);
    key = step.extent_hash;
    if (stand_in_count_ == 0) return learned;
    const auto learned_places = places(step);
    // The predicted launch is `ahead` after the last observed one, whose index is recent_count_ - 1.
    const uint64_t target = recent_count_ - 1 + ahead;
    const uint64_t repeat = repeat_distance();
    bool replaced = false;
    for (size_t i = 0; i < learned.size(); ++i) {
        const StandIn& in = stand_ins_[learned_places[i]];
        if (in.alloc_id == kNoStandIn || target - in.since >= repeat) continue;
        if (!replaced) scratch.assign(learned.begin(), learned.end());
        replaced = true;
        scratch[i].alloc_id = in.alloc_id;
        key = combine(combine(key, i), in.alloc_id);
    }
    if (!replaced) return learned;
    key = finish(key);
    return scratch;
}

uint32_t Predictor::stand_in(uint32_t place, uint32_t alloc_id) const {
    const uint32_t in = stand_ins_[place].alloc_id;
    return in == kNoStandIn ? alloc_id : in;
}

std::span<const uint32_t> Predictor::places(const Step& step) const {
    return {places_.data() + step.first_access, step.access_count};
}

void Predictor::add_places(std::span<const trace::Access> accesses) {
    for (const trace::Access& a : accesses) {
        const auto [it, added] = place_of_id_.try_emplace(a.alloc_id, static_cast<uint32_t>(stand_ins_.size()));
        if (added) stand_ins_.emplace_back();
        places_.push_back(it->second);
    }
}

uint64_t Predictor::repeat_distance() const {
    if (frozen_) return steps_.size();
    return located_ ? steps_.size() - 1 - position_ : 0;
}

bool Predictor::replaces(uint32_t place, const trace::Access& known, const trace::Access& live,
                         const StateOf& state_of) const {
    if (known.offset != live.offset || known.alloc_id == live.alloc_id) return false;
    const uint32_t current = stand_in(place, known.alloc_id);
    if (current == live.alloc_id) return true;
    if (state_of(live.alloc_id) != AllocState::Live) return false;
    // Once a loop is frozen (a whole period came as predicted), a live allocation
    // in the place of one not freed yet takes its place too: a program that
    // allocates anew may free the last step's buffer only after making the new one.
    const AllocState known_state = state_of(current);
    return known_state == AllocState::Freed || (frozen_ && known_state == AllocState::Live);
}

void Predictor::note_stand_ins(const Step& expected, std::span<const trace::Access> accesses, const StateOf& state_of) {
    const auto known = this->accesses(expected);
    const auto known_places = places(expected);
    if (known.size() != accesses.size()) return;
    for (size_t i = 0; i < known.size(); ++i) {
        StandIn& in = stand_ins_[known_places[i]];
        // The learned allocation itself again: nothing stands in for it any more.
        if (known[i].alloc_id == accesses[i].alloc_id) {
            if (in.alloc_id != kNoStandIn) {
                in = StandIn{};
                --stand_in_count_;
            }
            continue;
        }
        if (!replaces(known_places[i], known[i], accesses[i], state_of)) continue;
        if (in.alloc_id == kNoStandIn) ++stand_in_count_;
        if (in.alloc_id != accesses[i].alloc_id) in = {accesses[i].alloc_id, recent_count_};
    }
}

uint32_t Predictor::context_score(uint64_t candidate) const {
    uint32_t score = 0;
    const uint64_t size = steps_.size();
    for (uint64_t back = 0; back < config_.context_length && back < recent_count_; ++back) {
        uint64_t index;
        if (frozen_) {
            index = (candidate + size - 1 - back % size) % size;
        } else {
            if (candidate < back + 1) break;
            index = candidate - 1 - back;
        }
        if (steps_[index].kernel_id != recent_kernel(back)) break;
        ++score;
    }
    return score;
}

bool Predictor::resembles(const Step& expected, std::span<const trace::Access> accesses, const StateOf& state_of) const {
    const auto known = this->accesses(expected);
    const auto known_places = places(expected);
    if (known.empty() || accesses.empty()) return known.empty() && accesses.empty();
    // An access at the same place in a list of the same length may replace a freed one.
    const bool in_place = state_of && known.size() == accesses.size();
    size_t shared = 0;
    for (size_t i = 0; i < accesses.size(); ++i) {
        const trace::Access& a = accesses[i];
        if (in_place && replaces(known_places[i], known[i], a, state_of)) {
            ++shared;
            continue;
        }
        // Lists of other lengths (a pointer argument that lands in a live
        // allocation in one step and in none in another) still share what they
        // name, the allocations standing in for the learned ones included.
        for (size_t j = 0; j < known.size(); ++j) {
            const bool stands_in = state_of && stand_in(known_places[j], known[j].alloc_id) == a.alloc_id;
            if (known[j].alloc_id == a.alloc_id || stands_in) {
                ++shared;
                break;
            }
        }
    }
    return 2 * shared >= std::max(known.size(), accesses.size());
}

void Predictor::resync(uint32_t kernel_id, uint64_t signature) {
    located_ = false;
    uint32_t latest = kNoPosition;
    bool by_signature = true;
    if (const auto it = latest_of_signature_.find(signature); it != latest_of_signature_.end()) {
        latest = it->second;
    } else if (const auto k = latest_of_kernel_.find(kernel_id); k != latest_of_kernel_.end()) {
        latest = k->second;
        by_signature = false;
    }
    if (latest == kNoPosition) return;
    uint32_t best_score = 0;
    uint64_t best = latest;
    uint32_t examined = 0;
    for (uint32_t c = latest; c != kNoPosition && examined < config_.max_candidates;
         c = by_signature ? earlier_[c].same_signature : earlier_[c].same_kernel, ++examined) {
        const uint32_t score = context_score(c);
        if (score > best_score) {
            best_score = score;
            best = c;
            if (score == config_.context_length) break;
        }
    }
    position_ = best;
    located_ = true;
}

void Predictor::append(uint32_t kernel_id, uint64_t signature, std::span<const trace::Access> accesses) {
    if (steps_.size() >= config_.max_history) {
        learning_ = false;
        return;
    }
    push_step(kernel_id, signature, accesses);
    // Loaded or frozen loops get theirs from rebuild_index.
    add_places(accesses);
    index_step(static_cast<uint32_t>(steps_.size() - 1));
}

void Predictor::index_step(uint32_t position) {
    const Step& step = steps_[position];
    auto [by_signature, signature_new] = latest_of_signature_.try_emplace(step.signature, position);
    auto [by_kernel, kernel_new] = latest_of_kernel_.try_emplace(step.kernel_id, position);
    earlier_.push_back({signature_new ? kNoPosition : by_signature->second, kernel_new ? kNoPosition : by_kernel->second});
    by_signature->second = position;
    by_kernel->second = position;
}

void Predictor::push_step(uint32_t kernel_id, uint64_t signature, std::span<const trace::Access> accesses) {
    Step step;
    step.kernel_id = kernel_id;
    step.signature = signature;
    step.extent_hash = extent_hash_of(signature, accesses);
    step.first_access = static_cast<uint32_t>(step_accesses_.size());
    step.access_count = static_cast<uint32_t>(accesses.size());
    step_accesses_.insert(step_accesses_.end(), accesses.begin(), accesses.end());
    steps_.push_back(step);
}

void Predictor::maybe_freeze() {
    // The live launch is the last history entry; it matched position_, so the
    // program repeats with this period for as long as the hits have run.
    const uint64_t live = steps_.size() - 1;
    const uint64_t period = live - position_;
    if (period == 0 || consecutive_hits_ < period || consecutive_hits_ < config_.min_confirm_hits) return;

    std::vector<Step> loop;
    std::vector<trace::Access> loop_accesses;
    loop.reserve(period);
    for (uint64_t i = live + 1 - period; i <= live; ++i) {
        Step step = steps_[i];
        const auto span = accesses(step);
        step.first_access = static_cast<uint32_t>(loop_accesses.size());
        loop_accesses.insert(loop_accesses.end(), span.begin(), span.end());
        loop.push_back(step);
    }
    steps_ = std::move(loop);
    step_accesses_ = std::move(loop_accesses);
    frozen_ = true;
    position_ = period - 1;
    rebuild_index();
}

void Predictor::load_loop(const LoopSeed& seed) {
    steps_.clear();
    step_accesses_.clear();
    for (const LoopSeed::Launch& launch : seed.launches) {
        const auto accesses = seed.accesses_of(launch);
        push_step(launch.kernel_id, signature_of(launch.kernel_id, accesses), accesses);
    }
    frozen_ = !steps_.empty();
    learning_ = true;
    located_ = false;
    consecutive_hits_ = 0;
    position_ = 0;
    rebuild_index();
}

void Predictor::keep_current_loop() {
    const auto same = [&](const Loop& loop) {
        return loop.steps.size() == steps_.size() &&
               std::equal(loop.steps.begin(), loop.steps.end(), steps_.begin(),
                          [](const Step& a, const Step& b) { return a.signature == b.signature; });
    };
    std::erase_if(kept_loops_, same);
    kept_loops_.push_back({steps_, step_accesses_});
    if (kept_loops_.size() > kKeptLoops) kept_loops_.erase(kept_loops_.begin());
}

bool Predictor::switch_to_kept_loop(uint32_t kernel_id, uint64_t signature) {
    for (size_t i = kept_loops_.size(); i-- > 0;) {
        const Loop& loop = kept_loops_[i];
        const bool holds = std::any_of(loop.steps.begin(), loop.steps.end(), [&](const Step& step) {
            return step.signature == signature || step.kernel_id == kernel_id;
        });
        if (!holds) continue;
        Loop found = std::move(kept_loops_[i]);
        kept_loops_.erase(kept_loops_.begin() + static_cast<std::ptrdiff_t>(i));
        keep_current_loop();
        steps_ = std::move(found.steps);
        step_accesses_ = std::move(found.accesses);
        rebuild_index();
        // The loop holds a step of this kernel at least, so this locates the launch.
        resync(kernel_id, signature);
        return true;
    }
    return false;
}

void Predictor::unfreeze() {
    keep_current_loop();
    frozen_ = false;
    learning_ = true;
    located_ = false;
    consecutive_hits_ = 0;
}

void Predictor::rebuild_index() {
    // Called whenever steps_ is replaced: the places were the old steps' allocations.
    places_.clear();
    place_of_id_.clear();
    stand_ins_.clear();
    stand_in_count_ = 0;
    add_places(step_accesses_);
    latest_of_signature_.clear();
    latest_of_kernel_.clear();
    earlier_.clear();
    for (uint32_t i = 0; i < steps_.size(); ++i) index_step(i);
}

} // namespace uvmp
