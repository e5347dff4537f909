"""Seeded conversations in which facts change (and look-alikes that must not), for the
knowledge-update benchmark.

Every scenario is a list of speaker-prefixed turns ("user: ...", "assistant: ...") with
times, one or more questions, and for each question the turn that states the current
value and the turns that state stale ones. Negatives hold two different facts that only
look alike, or incidental cue words ("color correction", "instead of Wi-Fi"), and every
turn of them must stay current.

Two splits come from two disjoint seeds: `tune` (free to look at while building a fix)
and `report` (the numbers to publish). A report scenario identical to a tune scenario is
never emitted, so the splits share nothing.

    from knowledge_scenarios import generate
    scenarios = generate("report")   # deterministic for the split's seed
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

SEEDS = {"tune": 20240611, "report": 77031}
PER_SPLIT = 320

# Update phrasing families. The cue-word families carry words a correction detector may
# key on; `plain` states only the new value; `elliptical` omits the subject, named a few
# turns earlier.
FAMILIES = (
    "actually",
    "changed_to",
    "cue_verb",  # moved to / switched to / increased to / extended to / rescheduled to ...
    "my_new",
    "from_now_on",
    "these_days",
    "no_longer",
    "restate",  # the subject and the new value, no cue word
    "plain",  # a natural sentence with the new value only ("I secured 5 interviews")
    "elliptical",
)

GAPS = {
    "minutes": (timedelta(minutes=3), timedelta(minutes=40)),
    "hours": (timedelta(hours=1), timedelta(hours=10)),
    "days": (timedelta(days=1), timedelta(days=6)),
    "weeks": (timedelta(days=7), timedelta(days=30)),
    "months": (timedelta(days=31), timedelta(days=150)),
    "year": (timedelta(days=300), timedelta(days=365)),
}


@dataclass(frozen=True)
class Turn:
    id: str
    speaker: str  # "user" | "assistant"
    text: str  # speaker-prefixed, as the faces log it
    at: datetime
    role: str  # statement | update | intro | distractor | reply | incidental | twin
    fact: str | None = None
    value: str | None = None
    family: str | None = None  # for updates


@dataclass(frozen=True)
class Probe:
    fact: str
    kind: str  # the fact kind ("rent", "city", ...)
    question: str
    wording: str  # "old" (reuses the first statement's words) | "neutral"
    current_value: str
    current_turn: str
    stale_values: tuple[str, ...]
    stale_turns: tuple[str, ...]
    family: str | None  # phrasing family of the update that set the current value
    negative: bool = False


@dataclass(frozen=True)
class Scenario:
    id: str
    split: str
    kind: str  # "update" | "twin" | "incidental"
    turns: tuple[Turn, ...]
    probes: tuple[Probe, ...]
    must_stay_current: frozenset[str]  # turn ids that no later turn may retire
    retirable: dict[str, frozenset[str]] = field(default_factory=dict)  # stale turn -> by
    gap: str = "minutes"
    asked_at: datetime = datetime(2025, 1, 1, tzinfo=UTC)

    def signature(self) -> tuple[str, ...]:
        return tuple(t.text for t in self.turns) + tuple(p.question for p in self.probes)


@dataclass(frozen=True)
class Kind:
    name: str
    values: tuple[str, ...]
    subjects: tuple[str, ...]  # "{subj} is {v}" reads well with each
    states: tuple[tuple[str, str], ...]  # (first statement, question in its words)
    neutral: tuple[str, ...]  # questions in other words
    cue_verbs: tuple[str, ...]  # kind-specific updates with a change verb
    my_new: tuple[str, ...]
    plain: tuple[str, ...]  # new value only, no cue word
    intros: tuple[str, ...]  # name the subject, no value
    ellipses: tuple[str, ...]  # the value without the subject


def _k(name: str, values: str, subjects: str, states: Sequence[tuple[str, str]],
       neutral: Sequence[str], cue_verbs: Sequence[str], my_new: Sequence[str],
       plain: Sequence[str], intros: Sequence[str], ellipses: Sequence[str]) -> Kind:
    return Kind(name, tuple(v.strip() for v in values.split("|")),
                tuple(s.strip() for s in subjects.split("|")), tuple(states), tuple(neutral),
                tuple(cue_verbs), tuple(my_new), tuple(plain), tuple(intros), tuple(ellipses))


KINDS: tuple[Kind, ...] = (
    _k("city", "Lisbon|Porto|Berlin|Austin|Denver|Toronto|Madrid|Seattle|Dublin|Osaka|"
       "Melbourne|Prague|Vienna|Montreal",
       "my home city|the city I live in",
       [("I live in {v} with my partner.", "Which city do I live in with my partner?"),
        ("Our apartment is in {v}, near the old town.", "Where is our apartment?"),
        ("I'm based in {v} these past few years.", "Where am I based?")],
       ["What city am I living in now?", "Where's home for me?"],
       ["We moved to {v} last month.", "We relocated to {v} for good.",
        "I moved to {v} in the spring."],
       ["My new city is {v}.", "My new home is in {v}."],
       ["We just signed a lease in {v} and the boxes are unpacked.",
        "Loving the new neighbourhood in {v}, the trams are great."],
       ["About where we live.", "Remember the question of where we'd settle?"],
       ["We ended up choosing {v}.", "Made the move, {v} it is.", "It's {v} now."]),
    _k("employer", "Acme Corp|Globex|Initech|Umbrella Health|Stark Logistics|Wayne Media|"
       "Hooli|Vandelay Imports|Cyberdyne|Soylent Foods|Pied Piper|Massive Dynamic",
       "my employer|the company I work for",
       [("I work as an engineer at {v}.", "Where do I work as an engineer?"),
        ("My job is at {v}, in the data team.", "Where is my job in the data team?"),
        ("I'm employed by {v} on a full-time contract.", "Who employs me full-time?")],
       ["Which company am I at?", "Who is my employer?"],
       ["I switched to {v} in March.", "I joined {v} after leaving my last job.",
        "I changed jobs to {v}."],
       ["My new employer is {v}.", "My new job is at {v}."],
       ["I signed the offer from {v} yesterday and start Monday.",
        "First week at {v} done, the onboarding was smooth."],
       ["So, about my job situation.", "Remember the job search I mentioned?"],
       ["I accepted the offer from {v}.", "Went with {v} in the end.", "It's {v} now."]),
    _k("manager", "Dana Kim|Luis Ortega|Priya Nair|Tom Becker|Aiko Sato|Grace Liu|"
       "Omar Haddad|Nina Petrova|Sam Walker|Chloe Martin|Ravi Shah|Elena Rossi",
       "my manager|the person I report to",
       [("I report to {v}, who runs the platform group.", "Who do I report to?"),
        ("My boss is {v}; we have one-on-ones weekly.", "Who is my boss for one-on-ones?"),
        ("{v} manages me and two other analysts.", "Who manages me and the analysts?")],
       ["Who is my manager?", "Who's my line manager at work?"],
       ["My reporting line switched to {v}.", "I was moved to {v}'s team.",
        "They reassigned me to {v}."],
       ["My new manager is {v}.", "My new boss is {v}."],
       ["Had my first one-on-one with {v} today, she seems sharp.",
        "{v} approved my leave request this morning."],
       ["There was a reorg at work.", "About who I report to."],
       ["It's {v} from now.", "I'm under {v} now.", "{v} took over."]),
    _k("budget", "$40,000|$55,000|$62,500|$70,000|$85,000|$90,000|$120,000|$35,000|"
       "$48,000|$150,000|$75,000|$99,000",
       "our project budget|the budget for the migration project",
       [("The migration project has a budget of {v}.", "What budget does the migration "
         "project have?"),
        ("We were given {v} to spend on the migration.", "How much were we given to spend "
         "on the migration?")],
       ["How much money is there for the project?", "What's the project's budget?"],
       ["The budget was increased to {v}.", "They cut the budget to {v}.",
        "Finance raised the budget to {v}."],
       ["The new budget is {v}.", "Our new budget figure is {v}."],
       ["Finance signed off on {v} for the project this morning.",
        "We can now spend {v} on the migration, per the CFO."],
       ["Quick note on the migration money.", "About the project budget."],
       ["It's {v} now.", "Finance approved {v}.", "Make that {v}."]),
    _k("deadline", "May 3|May 20|June 1|June 14|July 7|April 28|March 15|August 2|"
       "September 9|October 1|November 12|December 5",
       "the report deadline|the due date for the quarterly report",
       [("The quarterly report is due on {v}.", "When is the quarterly report due?"),
        ("I have to submit the quarterly report by {v}.", "By when do I have to submit the "
         "quarterly report?")],
       ["What's the deadline for the report?", "When must the report be done?"],
       ["The deadline was extended to {v}.", "The deadline got pushed to {v}.",
        "They moved the deadline up to {v}."],
       ["The new deadline is {v}.", "The new due date is {v}."],
       ["I got a few more weeks; the report now goes in on {v}.",
        "Legal needs it earlier, so it's {v} for the report."],
       ["About the quarterly report.", "Remember that report I was stressing about?"],
       ["It was extended to {v}.", "They gave us until {v}.", "It's {v} now."]),
    _k("meeting", "9:00 AM|10:30 AM|11:15 AM|1:00 PM|2:30 PM|3:45 PM|4:30 PM|5:00 PM|"
       "8:30 AM|12:00 PM|9:45 AM|4:00 PM",
       "the weekly design sync|our Tuesday sync with design",
       [("Our weekly sync with the design team is at {v} on Tuesdays.",
         "When is our weekly sync with the design team on Tuesdays?"),
        ("The sync with design happens every Tuesday at {v}.", "When does the sync with "
         "design happen every Tuesday?")],
       ["What time is the design meeting?", "When do we meet the designers?"],
       ["The sync was rescheduled to {v}.", "The meeting got moved to {v}.",
        "We shifted the sync to {v}."],
       ["The new meeting time is {v}.", "The new slot is {v}."],
       ["Calendar invite updated: Tuesdays at {v} with design.",
        "See you at {v} on Tuesday for the design sync."],
       ["About the Tuesday design sync.", "The design meeting, one more thing."],
       ["It's rescheduled to {v}.", "It's at {v} now.", "Make that {v}."]),
    _k("car", "a Honda Civic|a Toyota Corolla|a Tesla Model 3|a Volkswagen Golf|a Mazda 3|"
       "a Subaru Outback|a Ford Focus|a Kia Niro|a BMW i3|a Volvo XC40|a Nissan Leaf",
       "my car|my daily car",
       [("I drive {v} to work every day.", "What do I drive to work every day?"),
        ("My daily driver is {v}.", "What is my daily driver?")],
       ["What car do I have?", "Which car is mine?"],
       ["I switched to {v}.", "I traded it in for {v}.", "I upgraded to {v}."],
       ["My new car is {v}.", "My new ride is {v}."],
       ["Picked up {v} from the dealer on Saturday.",
        "Parallel parking {v} is so much easier."],
       ["About my car.", "You know the car I was complaining about?"],
       ["Sold it and got {v}.", "It's {v} now.", "Went for {v}."]),
    _k("phone", "a Pixel 8|an iPhone 15|a Galaxy S24|a Fairphone 5|a OnePlus 12|"
       "an iPhone 13 mini|a Pixel 7a|a Nothing Phone|a Moto G|a Galaxy Z Flip",
       "my phone|the phone I use",
       [("I use {v} for work calls and email.", "What do I use for work calls and email?"),
        ("My phone is {v} with a cracked screen.", "What phone with the cracked screen "
         "do I have?")],
       ["Which phone do I have?", "What's my mobile?"],
       ["I switched to {v}.", "I replaced it with {v}.", "I changed phones to {v}."],
       ["My new phone is {v}.", "My new handset is {v}."],
       ["Setting up {v} took all evening, transferring photos.",
        "The camera on {v} is amazing."],
       ["About my phone.", "Remember my cracked phone?"],
       ["Replaced it, {v}.", "It's {v} now.", "Got {v}."]),
    _k("diet", "vegan|vegetarian|pescatarian|keto|gluten-free|low-carb|dairy-free|"
       "Mediterranean|paleo|intermittent fasting",
       "my diet|the way I eat",
       [("I follow a {v} diet for health reasons.", "What diet do I follow for health "
         "reasons?"),
        ("I've been eating {v} since the doctor's advice.", "How have I been eating since "
         "the doctor's advice?")],
       ["What do I eat?", "Any dietary restrictions for me?"],
       ["I switched to {v}.", "I changed my diet to {v}.", "I moved to {v} eating."],
       ["My new diet is {v}.", "My new eating plan is {v}."],
       ["Meal prep this week is all {v}, and I feel great.",
        "I ordered the {v} menu at the wedding."],
       ["About my diet.", "Regarding what I eat."],
       ["Going {v} now.", "It's {v} now.", "Trying {v}."]),
    _k("pet", "a beagle named Max|a tabby cat named Luna|a golden retriever named Bailey|"
       "a parrot named Kiwi|a rabbit named Clover|a husky named Storm|"
       "a corgi named Biscuit|a black cat named Salem|a hamster named Peanut",
       "my pet|our pet at home",
       [("At home we have {v} who loves walks.", "What pet do we have at home?"),
        ("Our family pet is {v}.", "What is our family pet?")],
       ["What animal do I own?", "Do I have a pet, and what is it?"],
       ["We adopted {v}.", "We rehomed the old one and took in {v}.",
        "We switched to {v} after the move."],
       ["Our new pet is {v}.", "My new pet is {v}."],
       ["Brought home {v} from the shelter on Sunday.",
        "The vet says {v} is perfectly healthy."],
       ["About our pet.", "Pet news."],
       ["We got {v}.", "It's {v} now.", "Welcome {v}."]),
    _k("gym", "Mondays and Thursdays|Tuesdays and Fridays|weekday mornings|"
       "Saturday mornings|every evening at 7|Wednesdays and Sundays|"
       "Monday, Wednesday and Friday|lunchtimes on weekdays|Sundays only",
       "my gym schedule|my weekly gym routine",
       [("I hit the gym {v} before work.", "When do I hit the gym before work?"),
        ("My training days at the gym are {v}.", "What are my training days at the gym?")],
       ["When do I exercise?", "What's my workout routine?"],
       ["My gym days switched to {v}.", "I changed my gym days to {v}.",
        "I moved my training to {v}."],
       ["My new gym schedule is {v}.", "My new workout days are {v}."],
       ["Sessions with the new coach are {v}.", "Booked the squat rack for {v} all month."],
       ["About my workouts.", "Gym routine, a tweak."],
       ["It's {v} now.", "Going {v}.", "Make that {v}."]),
    _k("rent", "$1,200|$1,350|$1,500|$980|$1,750|$2,100|$1,100|$1,425|$1,640|$2,400",
       "my rent|my monthly rent",
       [("I pay {v} a month for my apartment.", "How much do I pay a month for my "
         "apartment?"),
        ("The landlord charges me {v} per month.", "How much does the landlord charge me "
         "per month?")],
       ["What's my rent?", "How much is my housing cost?"],
       ["My rent increased to {v}.", "The rent went up to {v}.",
        "They lowered my rent to {v}."],
       ["My new rent is {v}.", "The new rent is {v}."],
       ["Signed the renewal at {v} a month.", "Transferred {v} to the landlord today."],
       ["About my rent.", "Got a letter from the landlord."],
       ["It's going up to {v}.", "It's {v} now.", "Make that {v}."]),
    _k("version", "Python 3.9|Python 3.10|Python 3.11|Python 3.12|Python 3.13|"
       "Python 3.8|PyPy 3.10|Python 3.14",
       "the Python version in production|our production runtime",
       [("Our production services run on {v}.", "What do our production services run "
         "on?"),
        ("The prod containers are built with {v}.", "What are the prod containers built "
         "with?")],
       ["Which interpreter version is deployed?", "What runtime is live?"],
       ["We upgraded production to {v}.", "Prod was migrated to {v}.",
        "We switched the containers to {v}."],
       ["The new production runtime is {v}.", "Our new runtime is {v}."],
       ["The deploy pipeline now pins {v} in the Dockerfile.",
        "All services passed their tests on {v} this morning."],
       ["About the prod runtime.", "On the production upgrade."],
       ["It's {v} now.", "Rolled out {v}.", "Done, {v}."]),
    _k("team_size", "4 people|6 people|8 people|10 people|12 people|15 people|3 people|"
       "20 people|9 people|7 people",
       "my team size|the size of my team",
       [("My team has {v} including me.", "How many people does my team have including "
         "me?"),
        ("There are {v} on the analytics team I lead.", "How many are on the analytics "
         "team I lead?")],
       ["How big is my team?", "How many direct reports do I have?"],
       ["The team grew to {v}.", "We shrank to {v} after the layoffs.",
        "Headcount increased to {v}."],
       ["My new team size is {v}.", "The new headcount is {v}."],
       ["We hired more and now I lead {v}.", "The offsite is booked for {v}."],
       ["About my team.", "Headcount news."],
       ["It's {v} now.", "We're {v}.", "Up to {v}."]),
    _k("flight", "Friday at 7:45 AM|Thursday at 6:10 PM|Saturday at noon|Sunday at 9:20 PM|"
       "Monday at 5:55 AM|Wednesday at 2:05 PM|Tuesday at 11:40 AM|Friday at 8:15 PM",
       "my flight to Boston|the Boston flight",
       [("My flight to Boston leaves {v} from gate B12.", "When does my flight to Boston "
         "leave?"),
        ("I'm booked on the Boston flight departing {v}.", "When is the Boston flight I'm "
         "booked on departing?")],
       ["When do I fly out?", "What time is my trip to Boston?"],
       ["The flight was rescheduled to {v}.", "The airline moved my flight to {v}.",
        "I changed my flight to {v}."],
       ["My new flight is {v}.", "The new departure is {v}."],
       ["Rebooked, boarding pass says {v}.", "Online check-in opens a day before {v}."],
       ["About the Boston trip.", "Travel update for Boston."],
       ["It's {v} now.", "Rebooked for {v}.", "Make that {v}."]),
    _k("doctor", "Dr. Patel|Dr. Nguyen|Dr. Okafor|Dr. Schmidt|Dr. Alvarez|Dr. Cohen|"
       "Dr. Yamamoto|Dr. Brennan|Dr. Costa|Dr. Lindqvist",
       "my doctor|my family doctor",
       [("My GP is {v} at the Elm Street clinic.", "Who is my GP at the Elm Street clinic?"),
        ("I see {v} for my checkups.", "Who do I see for my checkups?")],
       ["Who's my physician?", "Which doctor do I go to?"],
       ["I switched to {v}.", "The clinic reassigned me to {v}.",
        "I changed doctors to {v}."],
       ["My new doctor is {v}.", "My new GP is {v}."],
       ["Booked my annual physical with {v} for next week.",
        "{v} renewed my prescription without fuss."],
       ["About my doctor.", "Clinic news."],
       ["It's {v} now.", "Seeing {v}.", "{v} from now."]),
    _k("fav_food", "ramen|tacos|pad thai|sushi|lasagna|pho|paella|biryani|falafel|"
       "dumplings|pizza margherita|shakshuka",
       "my favourite food|the dish I like best",
       [("Nothing beats {v}, it's my favourite food.", "What food beats everything for "
         "me?"),
        ("My favourite meal is {v}.", "What is my favourite meal?")],
       ["What do I love to eat most?", "What should you cook for me?"],
       ["My favourite switched to {v}.", "I changed my mind, {v} is my favourite now.",
        "My taste moved to {v}."],
       ["My new favourite food is {v}.", "My new go-to dish is {v}."],
       ["I could eat {v} every single day.", "Ordered {v} again, third time this week."],
       ["About my favourite food.", "Food preferences, one more thing."],
       ["It's {v} now.", "{v}, hands down.", "Make that {v}."]),
    _k("fav_band", "Radiohead|Daft Punk|Fleetwood Mac|The National|Khruangbin|Arctic Monkeys|"
       "Bon Iver|Massive Attack|Tame Impala|Portishead|The Strokes|Beach House",
       "my favourite band|the band I like best",
       [("The band I listen to most is {v}.", "Which band do I listen to most?"),
        ("My all-time favourite band is {v}.", "What is my all-time favourite band?")],
       ["What music do I like?", "Which group is my favourite?"],
       ["My favourite switched to {v}.", "I switched allegiance to {v}.",
        "My top band changed to {v}."],
       ["My new favourite band is {v}.", "My new obsession is {v}."],
       ["I have {v} on repeat all week.", "Got tickets to see {v} live in June."],
       ["About music taste.", "Band talk."],
       ["It's {v} now.", "{v}, definitely.", "Make that {v}."]),
    _k("commute", "by bike|by train|by car|on foot|by bus|by e-scooter|by ferry|by tram",
       "my commute|my way to work",
       [("I commute to the office {v}, about forty minutes.", "How do I commute to the "
         "office?"),
        ("Getting to work means going {v} every morning.", "How do I get to work every "
         "morning?")],
       ["How do I travel to the office?", "What's my way into work?"],
       ["I switched to commuting {v}.", "I changed my commute to going {v}.",
        "I moved to going {v}."],
       ["My new commute is {v}.", "My new route to work is {v}."],
       ["Twenty minutes door to door {v}, much better.", "Bought a pass for going {v}."],
       ["About my commute.", "Getting to work, an update."],
       ["Going {v} now.", "It's {v} now.", "Make that {v}."]),
    _k("language", "Japanese|Spanish|German|Portuguese|Korean|Italian|Mandarin|French|"
       "Dutch|Greek|Turkish|Arabic",
       "the language I'm learning|my language course",
       [("I'm studying {v} on Duolingo every night.", "What am I studying on Duolingo "
         "every night?"),
        ("I take {v} lessons with a tutor.", "What lessons do I take with a tutor?")],
       ["Which language am I learning?", "What language course am I on?"],
       ["I switched to {v}.", "I changed my course to {v}.", "I moved on to {v}."],
       ["My new language is {v}.", "My new course is {v}."],
       ["Passed my first {v} quiz today.", "My {v} tutor gave me homework."],
       ["About language learning.", "My evening lessons."],
       ["It's {v} now.", "Doing {v}.", "Make that {v}."]),
    _k("coffee", "a flat white|an oat latte|a double espresso|a cortado|a cold brew|"
       "a cappuccino|an americano|a chai latte|a mocha|a macchiato",
       "my usual coffee order|my usual order at the cafe",
       [("At the cafe I always order {v}.", "What do I always order at the cafe?"),
        ("My morning coffee is {v} from the corner shop.", "What is my morning coffee "
         "from the corner shop?")],
       ["How do I take my coffee?", "What's my usual drink?"],
       ["I switched to {v}.", "I changed my order to {v}.", "I moved to {v}."],
       ["My new usual is {v}.", "My new coffee order is {v}."],
       ["The barista now starts {v} when I walk in.", "Had {v} and it was perfect."],
       ["About my coffee order.", "Cafe habits."],
       ["It's {v} now.", "Going with {v}.", "Make that {v}."]),
    _k("interviews", "2 interviews|3 interviews|4 interviews|5 interviews|6 interviews|"
       "7 interviews|8 interviews|1 interview",
       "my interview count|my interview tally",
       [("I have {v} lined up for next week.", "How many interviews do I have lined up "
         "for next week?"),
        ("So far I've booked {v} with tech companies.", "How many have I booked with tech "
         "companies?")],
       ["How is my job hunt going?", "How many interviews am I doing?"],
       ["My interviews increased to {v}.", "The count went up to {v}.",
        "It dropped to {v} after a cancellation."],
       ["My new interview count is {v}.", "New total: {v}."],
       ["I secured {v}.", "Recruiters came through, I've got {v} now."],
       ["About the job hunt.", "Interview news."],
       ["It's {v} now.", "Up to {v}.", "Make that {v}."]),
    _k("laptop", "a ThinkPad X1|a MacBook Air|a Dell XPS 13|a Framework 13|a MacBook Pro|"
       "a Surface Laptop|an HP Spectre|a ThinkPad T14|an Asus Zenbook",
       "my laptop|the computer I work on",
       [("I do all my coding on {v}.", "What do I do all my coding on?"),
        ("My work machine is {v} with 16 GB of RAM.", "What is my work machine with 16 GB "
         "of RAM?")],
       ["Which laptop do I use?", "What computer do I have?"],
       ["I switched to {v}.", "IT swapped it for {v}.", "I upgraded to {v}."],
       ["My new laptop is {v}.", "My new machine is {v}."],
       ["Unboxed {v} today and copied my dotfiles.", "Battery life on {v} is excellent."],
       ["About my work computer.", "Laptop situation."],
       ["It's {v} now.", "Got {v}.", "Went with {v}."]),
    _k("salary", "$72,000|$80,000|$88,000|$95,000|$104,000|$110,000|$65,000|$130,000|"
       "$92,500|$118,000",
       "my salary|my yearly pay",
       [("I earn {v} a year before tax.", "How much do I earn a year before tax?"),
        ("My annual pay is {v}.", "What is my annual pay?")],
       ["What's my income?", "How much am I paid?"],
       ["My salary was raised to {v}.", "My pay increased to {v}.",
        "They bumped me to {v}."],
       ["My new salary is {v}.", "My new pay is {v}."],
       ["HR confirmed {v} in the letter today.", "Negotiated hard and landed {v}."],
       ["About my pay.", "Had the compensation talk."],
       ["It's {v} now.", "Raised to {v}.", "Make that {v}."]),
)
KIND_BY_NAME = {k.name: k for k in KINDS}

GENERIC = {
    "actually": ["Actually, {subj} is {v}.", "Oh, actually {subj} is {v} now.",
                 "Actually {subj} changed, it's {v}.", "Sorry, actually {subj} is {v}."],
    "changed_to": ["{Subj} changed to {v}.", "{Subj} has changed to {v}.",
                   "Heads up, {subj} got changed to {v}."],
    "from_now_on": ["From now on, {subj} is {v}.", "From now on {subj} will be {v}.",
                    "Going forward, from now on {subj} is {v}."],
    "these_days": ["These days {subj} is {v}.", "{Subj} is {v} these days.",
                   "These days it's {v} for {subj}."],
    "no_longer": ["{Subj} is no longer {old}; it's {v}.", "{Subj} isn't {old} anymore, "
                  "it's {v}.", "{Subj} is no longer {old}. Now it's {v}."],
    "restate": ["{Subj} is {v}.", "Just so you know, {subj} is {v}.",
                "For the record, {subj} is {v}.", "FYI {subj} is {v}."],
}

ASSISTANT_ACK = [
    "Got it, thanks for telling me.", "Noted. Anything else you'd like me to keep track of?",
    "Thanks, I'll keep that in mind.", "Understood.", "Okay, I've made a note of that.",
    "Good to know! How are you feeling about it?", "Sounds good.",
    "Thanks for the update, that helps.", "Alright, noted for later.",
    "Interesting, tell me more if you like.",
]
ASSISTANT_ABOUT = [  # replies naming the subject: similar to the statement, never a change
    "Got it, I've noted {subj}.", "Thanks, I'll remember {subj}.",
    "Okay, {subj} is noted. Want a reminder about it?",
    "Noted about {subj}. Is there anything you want to plan around it?",
]
ASSISTANT_CUE = [  # an assistant reply with cue words: must never retire a user's statement
    "Actually, that sounds like a solid plan about {subj}.",
    "Noted. If anything changes to {subj}, just tell me and I'll update it.",
    "Instead of guessing, I'll keep {subj} exactly as you said.",
    "Actually, that's really helpful to know about {subj}.",
    "Got it. Let me know if {subj} is no longer accurate at some point.",
]
ASSISTANT_PROMPT = ["Sure, what changed?", "Okay, go ahead.", "Of course, what's new?",
                    "I'm listening.", "Sure thing, tell me."]

FILLER_USER = [
    "Did you catch the {sport} game last night?", "I'm thinking of making {dish} for dinner.",
    "Can you recommend a good {genre} novel?", "The weather in the {region} has been wild.",
    "I've been watching a documentary about {topic}.",
    "What's a good way to learn about {topic}?", "My neighbour just got into {hobby}.",
    "I keep meaning to try {hobby} this weekend.", "Any tips for a {genre} movie night?",
    "How long should I boil eggs for {dish}?", "I read an article about {topic} today.",
    "Do you think {hobby} is hard to pick up?", "We're planning a picnic if it's sunny.",
    "What's the capital of {country}?", "My kid asked me how {topic} works.",
    "I need a gift idea for someone who loves {hobby}.",
    "Is {country} nice to visit in autumn?", "I burnt the {dish} again, sigh.",
    "Tell me a fun fact about {topic}.", "The traffic this morning was terrible.",
]
FILLER_ASSISTANT = [
    "Happy to help! For {topic}, a short intro book is a good start.",
    "That sounds fun. {hobby} is easier than it looks once you get started.",
    "A classic choice for a {genre} evening is something from the 1990s.",
    "{country} is lovely in autumn: fewer crowds and milder weather.",
    "For {dish}, keep the heat moderate and taste as you go.",
    "Here's one: {topic} has surprised researchers for decades.",
    "I hope the {sport} game went your way!", "Picnics are great, don't forget sunscreen.",
]
SLOTS = {
    "sport": ["football", "basketball", "tennis", "cricket", "hockey", "rugby", "baseball"],
    "dish": ["risotto", "chili", "banana bread", "soup", "curry", "pancakes", "omelette"],
    "genre": ["mystery", "science fiction", "fantasy", "historical", "thriller", "comedy"],
    "region": ["north", "south", "mountains", "valley", "coast", "midwest"],
    "topic": ["black holes", "octopuses", "the Roman empire", "volcanoes", "bees",
              "deep sea vents", "ancient Egypt", "glaciers", "migratory birds"],
    "hobby": ["pottery", "bouldering", "birdwatching", "chess", "sourdough baking",
              "woodworking", "knitting", "photography", "gardening"],
    "country": ["Portugal", "Japan", "Chile", "Norway", "Morocco", "Vietnam", "Greece"],
}

# Two different facts that only look alike: both must stay current.
TWINS: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    # (statement a, statement b, question a, question b, value pool)
    ("My sister lives in {a}.", "My brother lives in {b}.", "Where does my sister live?",
     "Where does my brother live?", KIND_BY_NAME["city"].values),
    ("My parents live in {a}.", "My in-laws live in {b}.", "Where do my parents live?",
     "Where do my in-laws live?", KIND_BY_NAME["city"].values),
    ("The staging deadline is {a}.", "The production deadline is {b}.",
     "When is the staging deadline?", "When is the production deadline?",
     KIND_BY_NAME["deadline"].values),
    ("The design review is due {a}.", "The security review is due {b}.",
     "When is the design review due?", "When is the security review due?",
     KIND_BY_NAME["deadline"].values),
    ("The marketing budget is {a}.", "The travel budget is {b}.",
     "What is the marketing budget?", "What is the travel budget?",
     KIND_BY_NAME["budget"].values),
    ("My dentist is {a}.", "My dermatologist is {b}.", "Who is my dentist?",
     "Who is my dermatologist?", KIND_BY_NAME["doctor"].values),
    ("My work phone is {a}.", "My personal phone is {b}.", "What is my work phone?",
     "What is my personal phone?", KIND_BY_NAME["phone"].values),
    ("I drive {a} on weekdays.", "My wife drives {b}.", "What do I drive on weekdays?",
     "What does my wife drive?", KIND_BY_NAME["car"].values),
    ("The frontend team standup is at {a}.", "The backend team standup is at {b}.",
     "When is the frontend standup?", "When is the backend standup?",
     KIND_BY_NAME["meeting"].values),
    ("My daughter is learning {a} at school.", "My son is learning {b} at school.",
     "What is my daughter learning at school?", "What is my son learning at school?",
     KIND_BY_NAME["language"].values),
    ("The web servers run {a}.", "The data pipeline runs {b}.",
     "What do the web servers run?", "What does the data pipeline run?",
     KIND_BY_NAME["version"].values),
    ("My partner's favourite food is {a}.", "My favourite food is {b}.",
     "What is my partner's favourite food?", "What is my favourite food?",
     KIND_BY_NAME["fav_food"].values),
    ("My old flat cost {a} a month.", "The garage I rent costs {b} a month.",
     "What did my old flat cost?", "What does the garage cost?",
     KIND_BY_NAME["rent"].values),
    ("Our Berlin office has {a}.", "Our Madrid office has {b}.",
     "How many people are in the Berlin office?", "How many people are in the Madrid "
     "office?", KIND_BY_NAME["team_size"].values),
    ("Mum's doctor is {a}.", "Dad's doctor is {b}.", "Who is Mum's doctor?",
     "Who is Dad's doctor?", KIND_BY_NAME["doctor"].values),
)

# An earlier statement, and a later turn on the same topic with an incidental cue word
# that changes nothing: both must stay current.
INCIDENTALS: tuple[tuple[str, str, str], ...] = (
    # (earlier user statement, later turn, question about the earlier statement)
    ("user: I'm editing my cousin's wedding video this week.",
     "user: The color correction on the wedding video took me all evening.",
     "What video am I editing this week?"),
    ("user: My desktop keeps dropping the Wi-Fi connection.",
     "user: I use Ethernet instead of Wi-Fi for my desktop when I game.",
     "What problem does my desktop have?"),
    ("user: I bought new running sneakers for the half marathon.",
     "user: I'm donating the sneakers I no longer wear to the charity shop.",
     "What did I buy for the half marathon?"),
    ("user: We watched the new Dune movie last night.",
     "user: Actually, the Dune movie was better than I expected.",
     "What movie did we watch last night?"),
    ("user: I'm reading a biography of Ada Lovelace.",
     "user: The Ada Lovelace biography mentions she switched to mathematics young.",
     "What biography am I reading?"),
    ("user: My daughter plays violin in the school orchestra.",
     "user: The orchestra moved to a bigger hall for the winter concert.",
     "What does my daughter play in the school orchestra?"),
    ("user: I'm allergic to peanuts.",
     "user: At the party I had fruit instead of the peanut cookies, to be safe.",
     "What am I allergic to?"),
    ("user: I have a dentist appointment on Friday.",
     "user: The dentist said my old filling is no longer a problem.",
     "When is my dentist appointment?"),
    ("user: I'm training for the Berlin marathon in September.",
     "user: My running coach switched to interval sessions for the marathon plan.",
     "What am I training for in September?"),
    ("user: My grandmother turns 90 next month.",
     "user: Actually, grandma's party will be in her garden if it's sunny.",
     "Who turns 90 next month?"),
    ("user: I keep a sourdough starter called Bubbles on the counter.",
     "user: I fed Bubbles rye instead of white flour and it doubled overnight.",
     "What is my sourdough starter called?"),
    ("user: We planted tomatoes and basil in the backyard.",
     "user: The tomatoes moved to the greenhouse when the frost came.",
     "What did we plant in the backyard?"),
    ("user: My team uses Jira for sprint planning.",
     "user: In Jira, our board changed to a kanban view for the holidays.",
     "What does my team use for sprint planning?"),
    ("user: I'm learning to play the piano with an app.",
     "user: The piano app has a correction mode that flags wrong notes.",
     "How am I learning to play the piano?"),
    ("user: My brother's band plays at the pub on Saturday.",
     "user: Scratch that joke I made about my brother's band, they were great.",
     "When does my brother's band play at the pub?"),
    ("assistant: Your dentist appointment is on Friday at 10 AM, as you told me.",
     "assistant: Actually, I should mention dentists often run late on Fridays.",
     "When is my dentist appointment?"),
    ("user: Our cat Miso sleeps on the radiator all day.",
     "user: Miso no longer fits in her old basket, she's getting big.",
     "Where does our cat Miso sleep?"),
    ("user: I volunteer at the food bank on Wednesdays.",
     "user: The food bank moved to a warehouse with more storage space.",
     "When do I volunteer at the food bank?"),
    ("user: My laptop has a sticker of a fox on the lid.",
     "user: I now use a laptop stand instead of a stack of books.",
     "What sticker is on my laptop lid?"),
    ("user: I'm hosting a board game night on Friday.",
     "user: For game night we switched to Catan instead of Monopoly, way more fun.",
     "What am I hosting on Friday?"),
    ("user: My favourite colour is teal.",
     "user: I asked the painter for a correction on the teal wall, it looked blotchy.",
     "What is my favourite colour?"),
    ("user: I drink green tea every afternoon.",
     "user: Not anymore the cheap green tea bags though, I buy loose leaf.",
     "What do I drink every afternoon?"),
    ("user: We go camping at Lake Tahoe every August.",
     "user: Actually, Lake Tahoe gets crowded, so we book the campsite in January.",
     "Where do we go camping every August?"),
    ("user: I'm fixing the leaky faucet in the kitchen this weekend.",
     "user: The plumber said any more tightening would crack the kitchen faucet.",
     "What am I fixing this weekend?"),
    ("user: My mentor at work is Hannah from the research group.",
     "assistant: Actually, having Hannah as a mentor in research sounds valuable.",
     "Who is my mentor at work?"),
)


def _fill(template: str, **kw: str) -> str:
    out = template
    for key, val in kw.items():
        out = out.replace("{" + key + "}", val)
    return out


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


_YOU = {"my": "your", "our": "your", "i": "you", "i'm": "you're", "me": "you"}


def _second_person(subj: str) -> str:
    """The user's "my rent" as the assistant says it: "your rent"."""
    return " ".join(_YOU.get(w.casefold(), w) for w in subj.split())


def filler(rng: random.Random, speaker: str | None = None) -> tuple[str, str]:
    """One unrelated chat line (speaker, text without prefix)."""
    speaker = speaker or rng.choice(["user", "user", "assistant"])
    bank = FILLER_USER if speaker == "user" else FILLER_ASSISTANT
    text = rng.choice(bank)
    for slot, values in SLOTS.items():
        text = text.replace("{" + slot + "}", rng.choice(values))
    return speaker, _cap(text)


class _Builder:
    """Appends turns with times and fresh ids; no text twice in one scenario."""

    def __init__(self, rng: random.Random, start: datetime) -> None:
        self.rng = rng
        self.now = start
        self.turns: list[Turn] = []
        self.seen: set[str] = set()

    def add(self, speaker: str, text: str, role: str, *, fact: str | None = None,
            value: str | None = None, family: str | None = None) -> str:
        tid = f"t{len(self.turns):02d}"
        self.turns.append(Turn(tid, speaker, f"{speaker}: {text}", self.now, role, fact, value,
                               family))
        self.seen.add(f"{speaker}: {text}".casefold())
        self.now += timedelta(seconds=self.rng.randint(20, 240))
        return tid

    def distractors(self, n: int) -> None:
        for _ in range(n):
            for _attempt in range(20):
                speaker, text = filler(self.rng)
                if f"{speaker}: {text}".casefold() not in self.seen:
                    self.add(speaker, text, "distractor")
                    break

    def reply(self, options: Sequence[str], subj: str = "that") -> None:
        """An assistant reply not said before in this scenario."""
        fresh = [o for o in (_fill(x, subj=subj) for x in options)
                 if f"assistant: {o}".casefold() not in self.seen]
        if fresh:
            self.add("assistant", self.rng.choice(fresh), "reply")

    def fresh(self, options: Sequence[str], speaker: str = "user") -> str:
        """One of `options` not said yet in this scenario (or one marked as a repeat)."""
        unused = [o for o in options if f"{speaker}: {o}".casefold() not in self.seen]
        if unused:
            return self.rng.choice(unused)
        n = 2
        while True:
            text = f"{self.rng.choice(options)} (update {n})"
            if f"{speaker}: {text}".casefold() not in self.seen:
                return text
            n += 1

    def wait(self, gap: str) -> None:
        lo, hi = GAPS[gap]
        self.now += lo + (hi - lo) * self.rng.random()


def _update_text(rng: random.Random, kind: Kind, family: str, value: str,
                 old: str) -> str:
    subj = rng.choice(kind.subjects)
    if family in GENERIC:
        t = rng.choice(GENERIC[family])
    elif family == "cue_verb":
        t = rng.choice(kind.cue_verbs)
    elif family == "my_new":
        t = rng.choice(kind.my_new)
    elif family == "plain":
        t = rng.choice(kind.plain)
    else:
        raise ValueError(family)
    return _cap(_fill(t, subj=subj, Subj=_cap(subj), v=value, old=old))


def _update_scenario(rng: random.Random, sid: str, split: str, start: datetime) -> Scenario:
    n_facts = rng.choices([1, 2, 3], weights=[55, 30, 15])[0]
    kinds = rng.sample(KINDS, n_facts)
    gap = rng.choice(list(GAPS))
    plan = []  # per fact: values, families
    for fi, kind in enumerate(kinds):
        n_updates = rng.choices([1, 2, 3, 4], weights=[40, 30, 20, 10])[0]
        values = rng.sample(kind.values, n_updates + 1)
        families = [rng.choice(FAMILIES) for _ in range(n_updates)]
        state = rng.randrange(len(kind.states))
        plan.append((f"f{fi}", kind, values, families, state))
    b = _Builder(rng, start)
    b.distractors(rng.randint(0, 2))
    stated: dict[str, list[tuple[str, str, str | None]]] = {f: [] for f, *_ in plan}
    rounds = max(len(v) for _, _, v, _, _ in plan)
    for r in range(rounds):
        if r:
            b.wait(gap)
        order = [p for p in plan if r < len(p[2])]
        rng.shuffle(order)
        for fact, kind, values, families, state in order:
            b.distractors(rng.choices([0, 1, 2, 3], weights=[25, 35, 25, 15])[0])
            value = values[r]
            subj = rng.choice(kind.subjects)
            if r == 0:
                text = _fill(kind.states[state][0], v=value)
                tid = b.add("user", _cap(text), "statement", fact=fact, value=value)
                family = None
            else:
                family = families[r - 1]
                if family == "elliptical":
                    b.add("user", b.fresh(kind.intros), "intro", fact=fact)
                    if rng.random() < 0.6:
                        b.reply(ASSISTANT_PROMPT)
                    b.distractors(rng.choices([0, 1], weights=[60, 40])[0])
                    text = _fill(rng.choice(kind.ellipses), v=value)
                else:
                    text = _update_text(rng, kind, family, value, values[r - 1])
                if f"user: {text}".casefold() in b.seen:  # keep texts unique
                    text = f"{text} Just so you know."
                tid = b.add("user", _cap(text), "update", fact=fact, value=value,
                            family=family)
            stated[fact].append((tid, value, family))
            roll = rng.random()
            if roll < 0.30:
                b.reply(ASSISTANT_ACK)
            elif roll < 0.45:
                b.reply(ASSISTANT_ABOUT, _second_person(subj))
            elif roll < 0.55:
                b.reply(ASSISTANT_CUE, _second_person(subj))
    if rng.random() < 0.25:  # an incidental cue line unrelated to the facts
        earlier, later, _ = rng.choice(INCIDENTALS)
        for line in (earlier, later):
            speaker, _, text = line.partition(": ")
            if line.casefold() not in b.seen:
                b.add(speaker, text, "incidental")
    b.distractors(rng.randint(0, 2))
    asked = b.turns[-1].at + timedelta(days=1)
    probes = []
    retirable: dict[str, frozenset[str]] = {}
    for fact, kind, _values, _families, state in plan:
        chain = stated[fact]
        cur_tid, cur_val, cur_family = chain[-1]
        stale = [(tid, val) for tid, val, _ in chain[:-1] if val != cur_val]
        for i, (tid, _val, _) in enumerate(chain[:-1]):
            retirable[tid] = frozenset(t for t, _, _ in chain[i + 1:])
        if rng.random() < 0.75:
            question, wording = kind.states[state][1], "old"
        else:
            question, wording = rng.choice(kind.neutral), "neutral"
        probes.append(Probe(fact, kind.name, question, wording, cur_val, cur_tid,
                            tuple(v for _, v in stale), tuple(t for t, _ in stale),
                            cur_family))
    keep = frozenset(t.id for t in b.turns if t.id not in retirable)
    return Scenario(sid, split, "update", tuple(b.turns), tuple(probes), keep, retirable,
                    gap, asked)


def _twin_scenario(rng: random.Random, sid: str, split: str, start: datetime) -> Scenario:
    a_t, b_t, qa, qb, pool = rng.choice(TWINS)
    va, vb = rng.sample(pool, 2)
    gap = rng.choice(list(GAPS))
    b = _Builder(rng, start)
    b.distractors(rng.randint(0, 2))
    ta = b.add("user", _fill(a_t, a=va), "twin", fact="a", value=va)
    if rng.random() < 0.5:
        b.reply(ASSISTANT_ACK)
    b.distractors(rng.randint(0, 3))
    b.wait(gap)
    text_b = _fill(b_t, b=vb)
    if rng.random() < 0.3:  # the look-alike said with a cue word, still a different fact
        text_b = rng.choice(["Actually, ", "Oh, and actually ", "By the way, "]) + \
            text_b[0].lower() + text_b[1:]
    tb = b.add("user", text_b, "twin", fact="b", value=vb)
    if rng.random() < 0.5:
        b.reply(ASSISTANT_CUE)
    b.distractors(rng.randint(0, 2))
    asked = b.turns[-1].at + timedelta(days=1)
    probes = (Probe("a", "twin", qa, "old", va, ta, (), (), None, True),
              Probe("b", "twin", qb, "old", vb, tb, (), (), None, True))
    return Scenario(sid, split, "twin", tuple(b.turns), probes,
                    frozenset(t.id for t in b.turns), {}, gap, asked)


def _incidental_scenario(rng: random.Random, sid: str, split: str,
                         start: datetime) -> Scenario:
    earlier, later, question = rng.choice(INCIDENTALS)
    gap = rng.choice(["minutes", "hours", "days", "weeks"])
    b = _Builder(rng, start)
    b.distractors(rng.randint(0, 2))
    speaker, _, text = earlier.partition(": ")
    te = b.add(speaker, text, "incidental", fact="e")
    if speaker == "user" and rng.random() < 0.5:
        b.reply(ASSISTANT_ACK)
    b.distractors(rng.randint(0, 3))
    b.wait(gap)
    speaker, _, text = later.partition(": ")
    b.add(speaker, text, "incidental")
    b.distractors(rng.randint(0, 2))
    asked = b.turns[-1].at + timedelta(days=1)
    probes = (Probe("e", "incidental", question, "old", "", te, (), (), None, True),)
    return Scenario(sid, split, "incidental", tuple(b.turns), probes,
                    frozenset(t.id for t in b.turns), {}, gap, asked)


def generate(split: str, n: int = PER_SPLIT) -> list[Scenario]:
    """The split's scenarios, deterministic from its seed; `report` never repeats a
    `tune` scenario."""
    if split not in SEEDS:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(SEEDS)}")
    exclude: set[tuple[str, ...]] = set()
    if split == "report":
        exclude = {s.signature() for s in generate("tune", n)}
    rng = random.Random(SEEDS[split])
    out: list[Scenario] = []
    seen: set[tuple[str, ...]] = set()
    base = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
    while len(out) < n:
        sid = f"{split}-{len(out):03d}"
        start = base + timedelta(days=rng.randint(0, 120), minutes=rng.randint(0, 600))
        roll = rng.random()
        if roll < 0.70:
            sc = _update_scenario(rng, sid, split, start)
        elif roll < 0.87:
            sc = _twin_scenario(rng, sid, split, start)
        else:
            sc = _incidental_scenario(rng, sid, split, start)
        sig = sc.signature()
        if sig in exclude or sig in seen:
            continue
        seen.add(sig)
        out.append(sc)
    return out


def coverage(scenarios: Sequence[Scenario]) -> dict[str, int]:
    """Counts a reader (or a test) checks: phrasing families, negatives, ellipses,
    assistant turns, gaps, facts per scenario, updates per fact."""
    c: Counter[str] = Counter()
    for s in scenarios:
        c[f"scenario:{s.kind}"] += 1
        c[f"gap:{s.gap}"] += 1
        for t in s.turns:
            c["turns"] += 1
            if t.speaker == "assistant":
                c["assistant_turns"] += 1
            if t.role == "update":
                c[f"family:{t.family}"] += 1
        if s.kind == "update":
            c[f"facts_per_scenario:{len(s.probes)}"] += 1
            for p in s.probes:
                n_upd = sum(1 for t in s.turns if t.fact == p.fact and t.role == "update")
                c[f"updates_per_fact:{n_upd}"] += 1
                c[f"question:{p.wording}"] += 1
                c[f"kind:{p.kind}"] += 1
        c["probes"] += len(s.probes)
    return dict(sorted(c.items()))
