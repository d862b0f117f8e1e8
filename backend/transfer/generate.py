"""A seeded town of any size (`machi world generate --agents 1000 --seed 7`), so a run on a big town can be
reproduced by anyone from two numbers instead of a shared file.

`generate_town` is pure: the same (agents, seed, language) gives the same document, byte for byte, from
its own `random.Random(seed)`. The document is a bundled-town document (`towns/README.md`), loaded by the
same path as `machi world load`. Its proportions follow town25, the hand-written 25-agent town: 1.28 places
per agent, about two homes for three agents (most live alone, families share a home) and the rest public
places where people work and spend their free time, laid out on a grid of streets whose blocks are
neighbourhoods. Each agent knows 2-4 others (family first, then colleagues or schoolmates, then neighbours),
in its own language.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from typing import Any, Literal

from backend.transfer import lexicon as words
from backend.transfer.townfolk import Person, Place, kin_label, story, summary

Language = Literal["ja", "en", "mixed"]
MAX_AGENTS = 100_000
#: town25's 32 places for 25 agents.
PLACES_PER_AGENT = 1.28
#: (people, weight): how many share a home. Averages 1.5, town25's 25 agents in 17 homes.
HOUSEHOLDS = ((1, 65), (2, 22), (3, 10), (4, 3))
BLOCK_SIDE = 4  # a block (a neighbourhood) is 4 x 4 lots
LOT_M = 12.0
STREET_M = 16.0
RETIRE_AGE = 68
ADULT_AGE = 18
#: (oldest age, (ja, en) title, the school type's Japanese name ending) for pupils.
SCHOOL_STAGES = (
    (12, ("小学生", "pupil"), "小学校"),
    (15, ("中学生", "pupil"), "中学校"),
    (17, ("高校生", "student"), "高校"),
)


def generate_town(agents: int, *, seed: int = 1, language: Language = "ja") -> dict[str, Any]:
    """A town of `agents` people as a bundled-town document (`backend.transfer.demo.Town` validates it).

    Args:
        agents: how many people, 1 to MAX_AGENTS.
        seed: the only source of chance: the same seed gives the same town.
        language: "ja" or "en" for a town of one language; "mixed" alternates households.

    Returns:
        `{"format": "machi-town", "version": 1, "description", "cast", "pois", "agents", "relationships"}`;
        `cast` names the party's host (the owner of the first café) and the café (`party_place`).

    Raises:
        ValueError: `agents` out of range or an unknown language.
    """
    if not 1 <= agents <= MAX_AGENTS:
        raise ValueError(f"agents must be 1-{MAX_AGENTS}, not {agents}")
    if language not in ("ja", "en", "mixed"):
        raise ValueError(f"language must be ja, en or mixed, not {language!r}")
    rng = random.Random(seed)
    households = _households(rng, agents, language)
    people = [person for members in households for person in members]
    homes = [Place(f"home-{i + 1}", "home", members[0].language) for i, members in enumerate(households)]
    publics = _public_places(rng, max(3, round(agents * PLACES_PER_AGENT) - len(homes)), language)
    blocks = _lay_out(rng, [*homes, *publics])
    _name_homes(rng, homes, households, blocks)
    _name_publics(rng, publics, blocks)
    _occupy(rng, people, publics)
    relationships = _relationships(rng, people, homes, blocks)
    personas = [_agent(rng, p, homes[p.household], blocks[homes[p.household].block]) for p in people]
    counts = (len(people), len(homes), len(publics), len(relationships))
    return {
        "format": "machi-town",
        "version": 1,
        "description": _description(rng, language, seed, counts),
        "cast": {"party_host": people[0].id, "party_place": publics[0].id},
        "pois": [_poi(place) for place in [*publics, *homes]],
        "agents": personas,
        "relationships": relationships,
    }


def _households(rng: random.Random, agents: int, language: Language) -> list[list[Person]]:
    names = _Names(rng)
    households: list[list[Person]] = []
    left = agents
    while left:
        lang = language if language != "mixed" else ("ja", "en")[len(households) % 2]
        specs = _members(rng)[:left]
        people = names.household(lang, specs, len(households))
        _relate(people)
        households.append(people)
        left -= len(people)
    return households


def _members(rng: random.Random) -> list[tuple[str, bool, int]]:
    """(role, female, age) of one household's members: a single, a couple, or parent(s) with children."""
    size = rng.choices([s for s, _ in HOUSEHOLDS], [w for _, w in HOUSEHOLDS])[0]
    female = rng.random() < 0.5
    if size == 1:
        return [("head", female, rng.randint(19, 85))]
    couple = size == 4 or rng.random() < 0.75
    children = size - (2 if couple else 1)
    age = rng.randint(30, 60) if children else rng.randint(24, 82)
    members = [("head", female, age)]
    if couple:
        members.append(("spouse", not female, max(20, age + rng.randint(-4, 4))))
    for _ in range(children):
        members.append(("child", rng.random() < 0.5, rng.randint(6, min(age - 22, 30))))
    return members


class _Names:
    """Hands out full names nobody in the town has yet: a number suffix only once no family has room left."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[tuple[str, str]] = set()
        self.suffix = 0

    def household(self, language: str, specs: list[tuple[str, bool, int]], index: int) -> list[Person]:
        families = words.JA_FAMILY if language == "ja" else [(f, f.lower()) for f in words.EN_FAMILY]
        order = self.rng.sample(families, len(families))
        family = next((f for f in order if self._room(f, language, specs)), order[0])
        return [self._person(language, family, spec, index) for spec in specs]

    def _givens(self, language: str, female: bool) -> list[tuple[str, str]]:
        if language == "ja":
            return words.JA_FEMALE if female else words.JA_MALE
        return [(g, g.lower()) for g in (words.EN_FEMALE if female else words.EN_MALE)]

    def _room(self, family: tuple[str, str], language: str, specs: list[tuple[str, bool, int]]) -> bool:
        for female in (True, False):
            wanted = sum(1 for _, f, _ in specs if f == female)
            free = sum(1 for g in self._givens(language, female) if (family[0], g[0]) not in self.used)
            if free < wanted:
                return False
        return True

    def _person(
        self, language: str, family: tuple[str, str], spec: tuple[str, bool, int], index: int
    ) -> Person:
        role, female, age = spec
        givens = self._givens(language, female)
        free = [g for g in givens if (family[0], g[0]) not in self.used]
        given = self.rng.choice(free or givens)
        self.used.add((family[0], given[0]))
        if language == "ja":
            name, ident = f"{family[0]} {given[0]}", f"{family[1]}_{given[1]}"
        else:
            name, ident = f"{given[0]} {family[0]}", f"{given[1]}_{family[1]}"
        if not free:  # every name of this family is taken (a big town): the lists ran out
            self.suffix += 1
            name, ident = f"{name} {self.suffix}", f"{ident}_{self.suffix}"
        return Person(ident, name, given[0], language, female, age, role, index)


def _relate(people: list[Person]) -> None:
    """What each member of a household calls each other one: (ja, en), e.g. ("妻", "wife")."""
    for a in people:
        for b in people:
            if a is not b:
                a.kin.append((b, kin_label(a, b)))


def _public_places(rng: random.Random, count: int, language: Language) -> list[Place]:
    """`count` public places: one of each type first (in PLACE_TYPES order, a café first), then by weight."""
    places: list[Place] = []
    per_kind: dict[str, int] = defaultdict(int)
    for i in range(count):
        lang = language if language != "mixed" else ("ja", "en")[i % 2]
        types = [t for t in words.PLACE_TYPES if t.language in ("", lang)]
        kind_type = types[i] if i < len(types) else rng.choices(types, [t.weight for t in types])[0]
        per_kind[kind_type.kind] += 1
        places.append(Place(f"{kind_type.kind}-{per_kind[kind_type.kind]}", kind_type.kind, lang, kind_type))
    return places


def _lay_out(rng: random.Random, places: list[Place]) -> list[tuple[str, str]]:
    """Scatter the places over the lots of a square grid of blocks; returns each block's (ja, en) name."""
    lots = BLOCK_SIDE * BLOCK_SIDE
    count = math.ceil(len(places) / lots)
    side = math.ceil(math.sqrt(count))
    pitch = BLOCK_SIDE * LOT_M + STREET_M
    order = rng.sample(places, len(places))
    middle, lot_middle = (side - 1) / 2, (BLOCK_SIDE - 1) / 2
    for slot, place in enumerate(order):
        block, lot = divmod(slot, lots)
        (row, col), (lot_row, lot_col) = divmod(block, side), divmod(lot, BLOCK_SIDE)
        place.block = block
        place.x = round((col - middle) * pitch + (lot_col - lot_middle) * LOT_M, 1)
        place.z = round((row - middle) * pitch + (lot_row - lot_middle) * LOT_M, 1)
    return [_neighbourhood(block) for block in range(count)]


def _neighbourhood(block: int) -> tuple[str, str]:
    round_, index = divmod(block, len(words.NEIGHBOURHOODS))
    ja, en = words.NEIGHBOURHOODS[index]
    if round_ == 0:
        return ja, en
    prefixes = ("East", "West", "Upper", "Lower", "New", "Little", "Far")
    english = f"{prefixes[round_ - 1]} {en}" if round_ <= len(prefixes) else f"{en} {round_ + 1}"
    return f"{ja}{round_ + 1}丁目", english


def _name_homes(
    rng: random.Random, homes: list[Place], households: list[list[Person]], blocks: list[tuple[str, str]]
) -> None:
    used: set[str] = set()
    for home, members in zip(homes, households, strict=True):
        head, ja = members[0], home.language == "ja"
        family = head.name.split(" ")[0 if ja else 1]
        home.dwelling = dwelling = rng.choice(words.JA_DWELLINGS if ja else words.EN_DWELLINGS)
        if len(members) > 1 and (candidate := f"{family}家" if ja else f"{family} House") not in used:
            home.name = candidate
        else:
            home.name = f"{head.name}の{dwelling}" if ja else f"{head.name}'s {dwelling}"
        used.add(home.name)
        detail, where = rng.choice(words.HOME_DETAILS), blocks[home.block]
        if ja:
            home.description = f"{where[0]}の{dwelling}。{detail[0]}"
        else:
            home.description = f"A {dwelling} in {where[1]}. {detail[1]}"


def _name_publics(rng: random.Random, publics: list[Place], blocks: list[tuple[str, str]]) -> None:
    """Each type's name pattern with stems not used for it yet; the id's number is added once they run out."""
    stems: dict[tuple[str, str], list[str]] = {}
    for place in publics:
        assert place.type is not None
        ja = place.language == "ja"
        pattern = place.type.ja_name if ja else place.type.en_name
        pool = words.JA_STEMS if ja else words.EN_STEMS
        if (pattern, place.language) not in stems:
            stems[pattern, place.language] = rng.sample(pool, len(pool))
        left = stems[pattern, place.language]
        if left:
            place.name = pattern.format(s=left.pop())
        else:
            place.name = f"{pattern.format(s=rng.choice(pool))} {place.id.rsplit('-', 1)[1]}"
        where = blocks[place.block]
        detail = place.type.ja_detail if ja else place.type.en_detail
        place.description = f"{where[0]}にある。{detail}" if ja else f"In {where[1]}. {detail}"


def _occupy(rng: random.Random, people: list[Person], publics: list[Place]) -> None:
    """Work (or school, or retirement) and a pastime for everyone; the first person owns the first café."""
    schools = [place for place in publics if place.kind == "school"]
    by_kind: dict[str, list[Place]] = defaultdict(list)
    for place in publics:
        by_kind[place.kind].append(place)
        if place.type is not None:
            by_kind[place.type.en_name].append(place)
    for i, person in enumerate(people):
        if i == 0:  # the party's host
            person.work, person.title = publics[0], ("店主", "owner")
        elif person.age < ADULT_AGE:
            person.student = True
            person.title, person.work = _school(rng, person.age, schools)
        elif person.age >= RETIRE_AGE and rng.random() < 0.7:
            person.retired, person.title = True, ("年金暮らし", "pensioner")
        elif rng.random() < 0.08:
            person.title = rng.choice(words.HOME_WORK)
        else:
            person.work = rng.choice(publics)
            assert person.work.type is not None
            person.title = (person.work.type.ja_worker, person.work.type.en_worker)
        person.hobby = rng.choice(words.HOBBIES)
        spots = by_kind.get(person.hobby[2], [])
        person.spot = rng.choice(spots) if spots else None


def _school(rng: random.Random, age: int, schools: list[Place]) -> tuple[tuple[str, str], Place | None]:
    """A pupil's (ja, en) title and a school of its stage; None when the town has none (it goes elsewhere)."""
    title, suffix = next((title, suffix) for top, title, suffix in SCHOOL_STAGES if age <= top)
    fitting = [place for place in schools if place.type is not None and place.type.ja_name.endswith(suffix)]
    return title, rng.choice(fitting) if fitting else None


def _agent(rng: random.Random, person: Person, home: Place, where: tuple[str, str]) -> dict[str, Any]:
    ja = person.language == "ja"
    traits = rng.sample(words.TRAITS, 3)
    style = rng.choice(words.CHILD_STYLES if person.age < 13 else words.STYLES)
    goal = rng.choice(words.GOALS) if person.age >= ADULT_AGE else None
    wake, sleep = _hours(rng, person)
    return {
        "id": person.id,
        "name": person.name,
        "language": person.language,
        "age": person.age,
        "traits": [trait[0 if ja else 1] for trait in traits],
        "backstory": story(person, home, where, goal),
        "speaking_style": style[0 if ja else 1],
        "home_poi": home.id,
        "wake_hour": wake,
        "sleep_hour": sleep,
    }


def _hours(rng: random.Random, person: Person) -> tuple[float, float]:
    """When one rises and goes to bed: bakers before dawn, publicans late, children early to bed."""
    if person.student:
        return rng.choice((6.5, 7.0)), 21.0 if person.age <= 12 else rng.choice((22.5, 23.0))
    if person.retired:
        return rng.choice((5.5, 6.0, 6.5)), rng.choice((21.0, 21.5, 22.0))
    if person.work is not None and person.work.type is not None:
        wake = person.work.type.wake + rng.choice((-0.5, 0.0, 0.5))
        return wake, min(24.0, wake + rng.choice((15.5, 16.0, 16.5, 17.0)))
    return rng.choice((7.5, 8.0, 8.5)), rng.choice((23.5, 24.0))


def _relationships(
    rng: random.Random, people: list[Person], homes: list[Place], blocks: list[tuple[str, str]]
) -> list[dict[str, str]]:
    """Each person knows 2-4 others (all of its household, then colleagues or schoolmates, then neighbours,
    then anyone), each said in the knower's language."""
    by_work: dict[str, list[Person]] = defaultdict(list)
    by_block: dict[int, list[Person]] = defaultdict(list)
    for person in people:
        if person.work is not None:
            by_work[person.work.id].append(person)
        by_block[homes[person.household].block].append(person)
    out: list[dict[str, str]] = []
    for person in people:
        want = min(len(people) - 1, max(rng.randint(2, 4), len(person.kin)))
        work = by_work[person.work.id] if person.work is not None else []
        block = by_block[homes[person.household].block]
        pools = [
            ([other for other, _ in person.kin], "family"),
            (rng.sample(work, min(len(work), 6)), "work"),
            (rng.sample(block, min(len(block), 6)), "neighbour"),
        ]
        chosen: dict[str, tuple[Person, str]] = {}
        for pool, why in pools:
            for other in pool:
                if len(chosen) < want and other is not person:
                    chosen.setdefault(other.id, (other, why))
        while len(chosen) < want:
            other = people[rng.randrange(len(people))]
            if other is not person:
                chosen.setdefault(other.id, (other, "town"))
        for other, why in chosen.values():
            where = blocks[homes[other.household].block]
            text = summary(person, other, why, where, pastime=rng.random() < 0.5)
            out.append({"from": person.id, "to": other.id, "summary": text})
    return out


def _poi(place: Place) -> dict[str, Any]:
    return {
        "id": place.id,
        "name": place.name,
        "kind": place.kind,
        "description": place.description,
        "position": {"x": place.x, "y": 0.0, "z": place.z},
    }


def _description(rng: random.Random, language: Language, seed: int, counts: tuple[int, int, int, int]) -> str:
    """The town's name and size, and the command that makes it again."""
    agents, homes, publics, pairs = counts
    command = f"`machi world generate --agents {agents} --seed {seed} --language {language}`"
    ja = (
        f"{rng.choice(words.JA_STEMS)}町: {command} が作った{agents}人の町。"
        f"家{homes}軒と公共の場所{publics}か所、{pairs}組の知り合い。"
    )
    en = (
        f"{rng.choice(words.EN_STEMS)}field: a town of {agents} made by {command}; "
        f"{homes} homes, {publics} public places, {pairs} acquaintances."
    )
    return {"ja": ja, "en": en}.get(language, f"{ja} / {en}")
